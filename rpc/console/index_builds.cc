#include "rpc/console/index_builds.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shoal::rpc::console {

IndexBuilds::~IndexBuilds() {
  std::map<uint64_t, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& [id, thread] : threads) thread.join();
}

absl::StatusOr<IndexBuildState> IndexBuilds::Start(const std::string& collection,
                                                   const std::string& spec,
                                                   const std::string& started_by) {
  absl::MutexLock lock(&mu_);
  for (const IndexBuildState& build : builds_) {
    if (build.collection == collection && !build.done) {
      return absl::FailedPreconditionError(absl::StrCat(
          "collection: an index build of \"", collection, "\" is running (build ", build.id, ")"));
    }
  }
  // Reap the threads of finished builds (a done build's thread only returns after that), and
  // forget the oldest finished builds beyond the ones kept.
  size_t finished = 0;
  for (const IndexBuildState& build : builds_) {
    if (!build.done) continue;
    ++finished;
    if (auto it = threads_.find(build.id); it != threads_.end()) {
      it->second.join();
      threads_.erase(it);
    }
  }
  for (auto it = builds_.begin(); it != builds_.end() && finished >= kKeptFinished;) {
    if (it->done) {
      it = builds_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
  IndexBuildState state;
  state.id = next_id_++;
  state.collection = collection;
  state.spec = spec;
  state.started_by = started_by;
  state.phase = "starting";
  state.started = absl::Now();
  builds_.push_back(state);
  gate_->metrics().AddBuildsInProgress(1);
  gate_->metrics().SetBuildProgress(collection, 0);
  threads_.emplace(state.id, std::thread([this, id = state.id] { Run(id); }));
  return state;
}

std::vector<IndexBuildState> IndexBuilds::List() const {
  absl::MutexLock lock(&mu_);
  return std::vector<IndexBuildState>(builds_.rbegin(), builds_.rend());
}

IndexBuildState* IndexBuilds::Find(uint64_t id) {
  for (IndexBuildState& build : builds_) {
    if (build.id == id) return &build;
  }
  return nullptr;  // unreachable: a running build is never forgotten
}

void IndexBuilds::Update(uint64_t id, const std::string& phase, double fraction) {
  std::string collection;
  {
    absl::MutexLock lock(&mu_);
    IndexBuildState* build = Find(id);
    if (build == nullptr) return;
    build->phase = phase;
    build->fraction = fraction;
    collection = build->collection;
  }
  gate_->metrics().SetBuildProgress(collection, fraction);
}

void IndexBuilds::Run(uint64_t id) {
  std::string collection;
  std::string spec;
  {
    absl::MutexLock lock(&mu_);
    collection = Find(id)->collection;
    spec = Find(id)->spec;
  }
  absl::Status status;
  {
    DbHost::Lease lease = gate_->Acquire();
    status = lease.ok() ? lease->BuildIndex(collection, spec,
                                            [&](const IndexBuildProgress& progress) {
                                              Update(id, progress.phase, progress.fraction);
                                            })
                        : lease.status();
  }
  gate_->metrics().AddBuildsInProgress(-1);
  if (status.ok()) gate_->metrics().SetBuildProgress(collection, 1);
  absl::MutexLock lock(&mu_);
  IndexBuildState* build = Find(id);
  build->done = true;
  build->status = status;
  build->finished = absl::Now();
  if (status.ok()) {
    build->phase = "done";
    build->fraction = 1;
  }
}

}  // namespace shoal::rpc::console
