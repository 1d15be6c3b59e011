// ShardIndex's background builds (shard_index.h, "Rebuilds"): the build thread (k-means,
// assignment, encoding of the rows it reads in chunks), the background replay rounds of the
// delta log, the swap, and the process-wide bound on builds at once.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "cache/shard_index.h"

namespace shoal::cache {
namespace {

constexpr size_t kMaxLists = 8192;
constexpr size_t kSamplePerList = 16;  // k-means trains on at most 16 vectors per list
constexpr uint32_t kIterations = 8;
constexpr size_t kAssignChunk = 1024;  // vectors assigned per AssignTopM call
constexpr size_t kMaxReplayRounds = 2;
constexpr uint32_t kCodeBits = 1;

// About c sqrt(n) lists (c = Options::lists_per_sqrt): a search then ranks c sqrt(n) centroids
// and scans probes sqrt(n) / c codes.
size_t ListsFor(size_t n, double c) {
  const auto k = static_cast<size_t>(c * std::sqrt(static_cast<double>(n)));
  return std::clamp<size_t>(k, 1, std::min(n, kMaxLists));
}

// The process-wide bound on builds that train or encode at once (ShardIndex::
// SetMaxConcurrentBuilds). A waiting build gives up when its owner cancels it (Wake).
class BuildSlots {
 public:
  static BuildSlots& Get() {
    static BuildSlots* slots = new BuildSlots;
    return *slots;
  }
  void SetLimit(size_t n) {
    absl::MutexLock lock(&mu_);
    limit_ = std::max<size_t>(n, 1);
  }
  size_t limit() {
    absl::MutexLock lock(&mu_);
    return limit_;
  }
  // Waits for a free slot; false (no slot taken) once `cancel` is set.
  bool Acquire(const std::atomic<bool>& cancel) {
    struct Waiting {
      BuildSlots* slots;
      const std::atomic<bool>* cancel;
    } w{this, &cancel};
    mu_.LockWhen(absl::Condition(
        +[](Waiting* x) {
          return x->slots->busy_ < x->slots->limit_ || x->cancel->load(std::memory_order_relaxed);
        },
        &w));
    const bool got = !cancel.load(std::memory_order_relaxed);
    busy_ += got;
    mu_.Unlock();
    return got;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    --busy_;
  }
  // Makes waiters look at their cancel flags again.
  void Wake() { absl::MutexLock lock(&mu_); }

 private:
  BuildSlots() : limit_(std::max<size_t>(std::thread::hardware_concurrency() / 2, 1)) {}
  absl::Mutex mu_;
  size_t limit_;
  size_t busy_ = 0;
};

}  // namespace

void ShardIndex::SetMaxConcurrentBuilds(size_t n) { BuildSlots::Get().SetLimit(n); }
size_t ShardIndex::MaxConcurrentBuilds() { return BuildSlots::Get().limit(); }

struct ShardIndex::Build {
  static constexpr uint32_t kUnknown = ~uint32_t{0};
  // Rows 0..snapshot-1 of the shard when the build started: the thread reads them (as they are
  // then, under rows_mu_) in chunks; what changed since is in the delta log.
  size_t snapshot = 0;
  // The thread's. The owner reads next.centroids once `trained`, everything once `finished`.
  Clustering next;
  absl::Status status;  // OK: `next` holds every vector of the rows walked
  std::atomic<bool> trained{false};
  std::atomic<bool> cancel{false};
  std::unique_ptr<absl::Notification> finished = std::make_unique<absl::Notification>();
  size_t rounds = 0;  // background replay rounds started (StartReplay)
  // The owner's delta log: ids changed since the build started (or since the last replay round
  // was handed over) -> their list in `next` (kUnknown: not known yet, or removed).
  absl::flat_hash_map<uint64_t, uint32_t> touched;
  // A replay round's input: each changed id and its list (the thread reads its vector, or finds
  // it gone, under rows_mu_).
  std::vector<std::pair<uint64_t, uint32_t>> replay;
  std::unique_ptr<Hint> hint;  // ImportModel's, instead of training
  std::thread thread;
};

ShardIndex::ShardIndex(size_t dimension, index::Metric metric, const Options& options)
    : dimension_(dimension), metric_(metric), options_(options), vectors_(dimension, metric) {}

ShardIndex::~ShardIndex() {
  if (build_ == nullptr) return;
  build_->cancel.store(true, std::memory_order_relaxed);
  BuildSlots::Get().Wake();
  build_->thread.join();
}

bool ShardIndex::rebuild_ready() const {
  return build_ != nullptr && build_->finished->HasBeenNotified();
}

void ShardIndex::Touch(uint64_t id, const float* vector) {
  if (build_ == nullptr) return;
  const bool trained = vector != nullptr && build_->trained.load(std::memory_order_acquire);
  build_->touched[id] = trained ? NearestList(build_->next, vector) : Build::kUnknown;
}

void ShardIndex::Rebuild() {
  if (build_ != nullptr) return;
  const size_t n = size();
  if (n < options_.cluster_at || n < 2) {
    Unclustered();
    return;
  }
  // No copy here: the thread reads the rows in chunks under rows_mu_ (CopyRows).
  auto b = std::make_unique<Build>();
  b->snapshot = n;
  b->hint = std::move(hint_);
  Build* raw = b.get();
  build_ = std::move(b);
  build_->thread = std::thread([this, raw] { RunBuild(raw); });
}

size_t ShardIndex::CopyRows(size_t begin, size_t end, uint64_t* ids, float* rows) const {
  absl::ReaderMutexLock lock(&rows_mu_);
  end = std::min(end, vectors_.size());
  for (size_t row = begin; row < end; ++row) {
    ids[row - begin] = vectors_.IdAt(row);
    std::memcpy(rows + (row - begin) * dimension_, vectors_.RowAt(row), dimension_ * sizeof(float));
  }
  return end > begin ? end - begin : 0;
}

bool ShardIndex::AdoptRebuild() {
  if (!rebuild_ready()) return false;
  build_->thread.join();
  const bool keep = build_->status.ok() && size() >= options_.cluster_at / 2;
  if (keep && build_->touched.size() > kSwapRemainder && build_->rounds < kMaxReplayRounds) {
    StartReplay();  // too many changes to encode here: a background round first
    return false;
  }
  std::unique_ptr<Build> b = std::move(build_);
  failed_size_ = 0;
  if (!b->status.ok()) {
    failed_size_ = b->snapshot;
    ++build_failures_;
    last_build_error_ = b->status;
  }
  if (keep) {
    Clustering& next = b->next;
    for (const auto& [id, list] : b->touched) {
      Drop(&next, id);
      if (!vectors_.Contains(id)) continue;
      const float* v = vectors_.Vector(id);
      Encode(&next, id, v, list != Build::kUnknown ? list : NearestList(next, v));
    }
    live_ = std::move(next);
    ++generation_;
  }
  if (auto_cluster_) RebuildIfDue();
  return true;
}

void ShardIndex::StartReplay() {
  Build* b = build_.get();
  b->replay.assign(b->touched.begin(), b->touched.end());
  b->touched.clear();
  ++b->rounds;
  b->finished = std::make_unique<absl::Notification>();
  b->thread = std::thread([this, b] { RunReplay(b); });
}

void ShardIndex::RunReplay(Build* b) const {
  std::vector<float> rows(kAssignChunk * dimension_);
  std::vector<bool> present(kAssignChunk);
  for (size_t begin = 0; begin < b->replay.size(); begin += kAssignChunk) {
    if (b->cancel.load(std::memory_order_relaxed)) {
      b->status = absl::CancelledError("index build: cancelled");
      break;
    }
    const size_t m = std::min(kAssignChunk, b->replay.size() - begin);
    {
      absl::ReaderMutexLock lock(&rows_mu_);  // the vectors as they are now
      for (size_t j = 0; j < m; ++j) {
        const float* v = vectors_.Vector(b->replay[begin + j].first);
        present[j] = v != nullptr;
        if (v != nullptr) std::memcpy(rows.data() + j * dimension_, v, dimension_ * sizeof(float));
      }
    }
    for (size_t j = 0; j < m; ++j) {
      const auto [id, list] = b->replay[begin + j];
      Drop(&b->next, id);
      if (!present[j]) continue;
      const float* v = rows.data() + j * dimension_;
      Encode(&b->next, id, v, list != Build::kUnknown ? list : NearestList(b->next, v));
    }
  }
  b->replay = {};
  b->finished->Notify();
}

void ShardIndex::WaitForRebuild() {
  while (build_ != nullptr) {
    build_->finished->WaitForNotification();
    AdoptRebuild();
  }
}

void ShardIndex::RunBuild(Build* b) const {
  if (options_.build_hook) options_.build_hook("start");
  if (BuildSlots::Get().Acquire(b->cancel)) {
    b->status = Train(b);
    BuildSlots::Get().Release();
  } else {
    b->status = absl::CancelledError("index build: cancelled");
  }
  b->finished->Notify();
}

void ShardIndex::MakeCodec(Clustering* c) const {
  const size_t k = c->centroids.size() / dimension_;
  c->codec = std::make_unique<index::RaBitQ>(dimension_, kCodeBits, options_.seed);
  const size_t padded = c->codec->padded_dim();
  c->rotated.resize(k * padded);
  for (size_t i = 0; i < k; ++i) {
    c->codec->rotation().Apply(c->centroids.data() + i * dimension_,
                               c->rotated.data() + i * padded);
  }
  c->lists.assign(k, List{});
}

absl::Status ShardIndex::TrainCentroids(Build* b, index::ClusteringBackend& backend) const {
  const size_t n = b->snapshot;
  const size_t d = dimension_;
  const size_t k = ListsFor(n, options_.lists_per_sqrt);
  // A deterministic, evenly spread sample of the rows (fewer if rows went meanwhile).
  const size_t want = std::min(n, kSamplePerList * k);
  std::vector<float> x(want * d);
  size_t sample = 0;
  uint64_t id = 0;
  for (size_t i = 0; i < want; ++i) {
    const size_t row = i * n / want;
    sample += CopyRows(row, row + 1, &id, x.data() + sample * d);
  }
  index::KMeansOptions o{.k = static_cast<uint32_t>(k),
                         .iterations = kIterations,
                         .seed = options_.seed,
                         .lambda = 0,
                         .threads = 1,
                         .max_sample = sample};
  absl::StatusOr<index::KMeansResult> r = index::KMeans(backend, x.data(), sample, d, o);
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat("index build: k-means: ", r.status().message()));
  }
  b->next.centroids = std::move(r->centroids);
  b->next.built_size = n;
  return absl::OkStatus();
}

absl::Status ShardIndex::Train(Build* b) const {
  std::unique_ptr<index::ClusteringBackend> backend = index::MakeCpuClusteringBackend(1);
  Clustering& next = b->next;
  if (b->hint != nullptr) {  // a persisted model: no training, known ids keep their lists
    next.centroids = std::move(b->hint->centroids);
    next.built_size = b->hint->built_size;
  } else if (absl::Status s = TrainCentroids(b, *backend); !s.ok()) {
    return s;
  }
  MakeCodec(&next);
  b->trained.store(true, std::memory_order_release);  // centroids final from here
  if (options_.build_hook) options_.build_hook("trained");
  for (size_t begin = 0; begin < b->snapshot; begin += kAssignChunk) {
    if (b->cancel.load(std::memory_order_relaxed)) {
      return absl::CancelledError("index build: cancelled");
    }
    bool more = true;
    SHOAL_RETURN_IF_ERROR(EncodeChunk(b, *backend, begin, &more));
    if (!more) break;
    if (options_.build_hook) options_.build_hook("chunk");
  }
  return absl::OkStatus();
}

absl::Status ShardIndex::EncodeChunk(Build* b, index::ClusteringBackend& backend, size_t begin,
                                     bool* more) const {
  const size_t d = dimension_;
  Clustering& next = b->next;
  const size_t k = next.lists.size();
  thread_local std::vector<uint64_t> ids;
  thread_local std::vector<float> rows, todo_rows, distances;
  thread_local std::vector<uint32_t> list_of, labels;
  thread_local std::vector<size_t> todo;  // chunk rows whose list is unknown
  ids.resize(kAssignChunk), rows.resize(kAssignChunk * d), todo_rows.resize(kAssignChunk * d);
  distances.resize(kAssignChunk), list_of.resize(kAssignChunk), labels.resize(kAssignChunk);
  const size_t m =
      CopyRows(begin, std::min(begin + kAssignChunk, b->snapshot), ids.data(), rows.data());
  *more = m == kAssignChunk;
  todo.clear();
  for (size_t j = 0; j < m; ++j) {
    if (b->hint != nullptr) {
      auto it = b->hint->list_of.find(ids[j]);
      if (it != b->hint->list_of.end() && it->second < k) {
        list_of[j] = it->second;
        continue;
      }
    }
    std::memcpy(todo_rows.data() + todo.size() * d, rows.data() + j * d, d * sizeof(float));
    todo.push_back(j);
  }
  if (!todo.empty()) {
    absl::Status s = backend.AssignTopM(todo_rows.data(), todo.size(), next.centroids.data(), k, d,
                                        1, nullptr, labels.data(), distances.data());
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("index build: assignment: ", s.message()));
    }
    for (size_t t = 0; t < todo.size(); ++t) list_of[todo[t]] = labels[t];
  }
  for (size_t j = 0; j < m; ++j) {
    // A row the walk met twice (moved by a removal, then re-added) is encoded once.
    Drop(&next, ids[j]);
    Encode(&next, ids[j], rows.data() + j * d, list_of[j]);
  }
  return absl::OkStatus();
}

}  // namespace shoal::cache
