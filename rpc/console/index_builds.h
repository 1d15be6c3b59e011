// IndexBuilds: the index builds the web console started, each run on its own thread (with its
// own DB lease, as AdminService/BuildIndex runs them) while the page polls their progress.
//
//   IndexBuilds builds(&gate);
//   SHOAL_ASSIGN_OR_RETURN(IndexBuildState started, builds.Start("fashion", "spann:..."));
//   for (const IndexBuildState& b : builds.List()) ...   // phase, fraction, done, error
//
// Progress also goes to the server's metrics (shoal_index_builds_in_progress,
// shoal_index_build_progress{collection}), exactly as for gRPC builds.
// Thread safety: thread-safe. The destructor waits for every build to finish.
#ifndef SHOAL_RPC_CONSOLE_INDEX_BUILDS_H_
#define SHOAL_RPC_CONSOLE_INDEX_BUILDS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rpc/call_gate.h"

namespace shoal::rpc::console {

struct IndexBuildState {
  uint64_t id = 0;  // 1, 2, ... in start order
  std::string collection;
  std::string spec;
  std::string started_by;  // the key's NAME (never the key)
  std::string phase;       // the builder's latest (shoal::IndexBuildProgress::phase)
  double fraction = 0;     // 0..1
  bool done = false;
  absl::Status status;  // once done
  absl::Time started;
  absl::Time finished;  // once done
};

class IndexBuilds {
 public:
  // `gate` is not owned and must outlive this.
  explicit IndexBuilds(CallGate* gate) : gate_(gate) {}
  ~IndexBuilds();
  IndexBuilds(const IndexBuilds&) = delete;
  IndexBuilds& operator=(const IndexBuilds&) = delete;

  // Starts building `collection` (its real name) from `spec` in the background. Errors of the
  // build itself (a bad spec, out of RAM) arrive in its state. FAILED_PRECONDITION while a
  // console build of the same collection runs.
  absl::StatusOr<IndexBuildState> Start(const std::string& collection, const std::string& spec,
                                        const std::string& started_by);
  // Running builds and the most recent finished ones (at most kKeptFinished), newest first.
  std::vector<IndexBuildState> List() const;

  static constexpr size_t kKeptFinished = 16;

 private:
  void Run(uint64_t id);
  void Update(uint64_t id, const std::string& phase, double fraction);
  IndexBuildState* Find(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CallGate* const gate_;
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<IndexBuildState> builds_ ABSL_GUARDED_BY(mu_);       // oldest first
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);  // by build id
};

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_INDEX_BUILDS_H_
