// Shoal as an `ann` bench system: vectors loaded through the public DB API, the index built
// with DB::BuildIndex, and SearchParams (max_postings x pruning_ratio) swept.

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "bench/ann_system.h"
#include "bench/report.h"
#include "bench/shoal_collection.h"
#include "bench/sweep.h"

namespace shoal::bench {
namespace {

// SearchStats::full_vectors_read (full-precision vectors read to re-rank) is new: detected
// here so the bench builds against SearchStats with or without it.
template <typename Stats>
constexpr bool kHasFullVectorsRead = requires(const Stats& s) {
  s.full_vectors_read;
};

template <typename Stats>
uint64_t FullVectorsRead(const Stats& stats) {
  if constexpr (kHasFullVectorsRead<Stats>) {
    return stats.full_vectors_read;
  } else {
    return 0;
  }
}

class ShoalSystem : public AnnSystem {
 public:
  ShoalSystem(ShoalSystemOptions options, std::vector<GridPoint> grid)
      : options_(std::move(options)), grid_(std::move(grid)) {}

  std::string name() const override { return "shoal"; }
  std::string build_params() const override {
    std::string out = absl::StrCat("index=", index_);
    if (options_.posting_cache_bytes > 0) {
      absl::StrAppend(&out, ";posting_cache_bytes=", options_.posting_cache_bytes);
    }
    if (options_.ram_limit_bytes > 0) {
      absl::StrAppend(&out, ";index_ram_bytes_limit=", options_.ram_limit_bytes);
    }
    return out;
  }

  // Does the built index `built` (DescribeCollection's canonical spec, every key spelled out)
  // have every key=value the user's `spec` names? "auto" is resolved from the data, so any SPANN
  // index over the same vectors (the directory's own auto build) is taken as it.
  static bool SameIndex(const std::string& built, const std::string& spec) {
    if (spec == "auto") return built.rfind("spann:", 0) == 0;
    const size_t colon = spec.find(':');
    if (colon == std::string::npos || built.rfind(spec.substr(0, colon + 1), 0) != 0) {
      return built == spec;
    }
    for (absl::string_view item : absl::StrSplit(spec.substr(colon + 1), ',')) {
      const std::string key = std::string(item.substr(0, item.find('=') + 1));
      const size_t at = built.find(key);
      if (at == std::string::npos || built.compare(at, item.size(), std::string(item)) != 0 ||
          (at + item.size() < built.size() && built[at + item.size()] != ',')) {
        return false;
      }
    }
    return true;
  }

  absl::StatusOr<BuildInfo> Build(const Matrix& train, Metric metric, int threads) override {
    Options db_options;
    // Each client thread runs its own queries on one core, like every peer here.
    db_options.search_threads = 1;
    if (options_.posting_cache_bytes > 0) {
      db_options.posting_cache_bytes = options_.posting_cache_bytes;
    }
    db_options.index_ram_bytes_limit = options_.ram_limit_bytes;
    db_options.build_threads = static_cast<uint32_t>(threads);
    SHOAL_ASSIGN_OR_RETURN(
        collection_, ShoalCollection::Create(db_options, static_cast<uint32_t>(train.cols), metric,
                                             options_.data_dir));
    BuildInfo info;
    SHOAL_ASSIGN_OR_RETURN(CollectionInfo before,
                           collection_->db().DescribeCollection(ShoalCollection::kName));
    const double t0 = NowSeconds();
    if (options_.data_dir.empty() || before.num_vectors != train.rows) {
      SHOAL_RETURN_IF_ERROR(collection_->Load(train, options_.load_batch));
    } else {
      info.note = absl::StrCat("reused the ", train.rows, " vectors in ", options_.data_dir, ". ");
    }
    info.load_seconds = NowSeconds() - t0;
    index_ = options_.spec;
    // A kept directory whose index was built from this very spec over these vectors is reused:
    // tuning a search path then costs one build, not one per run.
    if (!options_.data_dir.empty() && before.num_vectors == train.rows &&
        SameIndex(before.index, options_.spec) && before.unindexed_vectors == 0) {
      absl::StrAppend(&info.note, "reused its index. ");
      return info;
    }
    const double t1 = NowSeconds();
    absl::Status built = collection_->db().BuildIndex(ShoalCollection::kName, options_.spec);
    info.build_seconds = NowSeconds() - t1;
    if (!built.ok()) {
      return absl::Status(built.code(),
                          absl::StrCat("BuildIndex(\"", options_.spec, "\"): ", built.message()));
    }
    absl::StatusOr<CollectionInfo> after =
        collection_->db().DescribeCollection(ShoalCollection::kName);
    if (after.ok()) absl::StrAppend(&info.note, "built ", after->index, ". ");
    return info;
  }

  std::vector<std::string> points() const override {
    if (index_ == "flat") return {"exact"};
    return GridPointStrings(grid_);
  }

  absl::Status SetParams(size_t point) override {
    params_ = SearchParams();
    if (index_ == "flat") return absl::OkStatus();
    if (point >= grid_.size()) return absl::OutOfRangeError("ShoalSystem::SetParams");
    for (const auto& [key, value] : grid_[point]) {
      if (key == "max_postings") params_.max_postings = static_cast<uint32_t>(value);
      if (key == "pruning_ratio") params_.pruning_ratio = static_cast<float>(value);
      if (key == "target_recall") params_.target_recall = static_cast<float>(value);
    }
    return absl::OkStatus();
  }

  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first,
                      IoCounters* counters) override {
    SearchStats stats;
    SearchParams params = params_;
    params.stats = &stats;
    SHOAL_RETURN_IF_ERROR(collection_->Search(queries, n, k, out, first, params));
    counters->Add({.bytes_read = stats.bytes_read,
                   .postings_read = stats.postings_read,
                   .cache_hits = stats.cache_hits,
                   .vectors_scored = stats.vectors_scored,
                   .full_vectors_read = FullVectorsRead(stats),
                   .read_batches = stats.read_batches});
    return absl::OkStatus();
  }

  // As Shoal reports it: CollectionInfo::index_ram_bytes (centroids, navigator, caches; for
  // flat the vectors held in RAM).
  double RamBytes() const override {
    if (!collection_) return 0;
    absl::StatusOr<CollectionInfo> info =
        collection_->db().DescribeCollection(ShoalCollection::kName);
    return info.ok() ? static_cast<double>(info->index_ram_bytes) : 0;
  }

  bool CountsFullVectorReads() const override { return kHasFullVectorsRead<SearchStats>; }

 private:
  ShoalSystemOptions options_;
  std::vector<GridPoint> grid_;
  std::unique_ptr<ShoalCollection> collection_;
  std::string index_;
  SearchParams params_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AnnSystem>> MakeShoalSystem(const ShoalSystemOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<GridPoint> grid, ParseGrid(options.sweep));
  for (const GridPoint& p : grid) {
    for (const auto& [key, value] : p) {
      if (key != "max_postings" && key != "pruning_ratio" && key != "target_recall") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--shoal-sweep: unknown key '", key, "' (max_postings, pruning_ratio, target_recall)"));
      }
    }
  }
  return std::unique_ptr<AnnSystem>(new ShoalSystem(options, std::move(grid)));
}

}  // namespace shoal::bench
