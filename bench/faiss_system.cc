// FAISS peers of the `ann` bench (IVF-Flat, IVF-SQ8, IVF-PQ + refine, ...: one factory string
// each), driven through the FaissIndex adapter so FAISS exceptions stay in one place.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/ann_system.h"
#include "bench/faiss_index.h"
#include "bench/report.h"

namespace shoal::bench {
namespace {

std::string MiB(size_t bytes) { return absl::StrFormat("%.1f MiB", bytes / double{1 << 20}); }

class FaissSystem : public AnnSystem {
 public:
  FaissSystem(std::string name, std::string factory, size_t train_rows,
              std::vector<GridPoint> sweep)
      : name_(std::move(name)),
        factory_(std::move(factory)),
        train_rows_(train_rows),
        sweep_(std::move(sweep)) {}

  std::string name() const override { return name_; }

  std::string build_params() const override {
    std::string out = absl::StrCat("factory=", factory_, ";train_rows=", trained_rows_);
    // IndexRefineFlat keeps every raw float32 vector in RAM and re-ranks the base index's
    // k * k_factor_rf candidates against them exactly.
    if (index_ && index_->has_refine()) absl::StrAppend(&out, ";refine=IndexRefineFlat(float32)");
    return out;
  }

  absl::StatusOr<BuildInfo> Build(const Matrix& train, Metric metric, int threads) override {
    FaissIndex::SetThreads(threads);
    SHOAL_ASSIGN_OR_RETURN(index_, FaissIndex::Create(factory_, train.cols, metric));
    trained_rows_ = train_rows_ == 0 ? train.rows : std::min(train_rows_, train.rows);
    BuildInfo info;
    const double t0 = NowSeconds();
    SHOAL_RETURN_IF_ERROR(index_->Train(train.data.data(), trained_rows_));
    SHOAL_RETURN_IF_ERROR(index_->Add(train.data.data(), train.rows));
    info.build_seconds = NowSeconds() - t0;  // ann-benchmarks' fit(): train + add
    const FaissIndex::Ram ram = index_->RamParts();
    info.note = absl::StrCat("RAM = lists (codes + ids) ", MiB(ram.lists), " + centroids ",
                             MiB(ram.centroids));
    if (ram.tables > 0) absl::StrAppend(&info.note, " + PQ precomputed tables ", MiB(ram.tables));
    if (ram.refine > 0) {
      absl::StrAppend(&info.note, " + refine's raw vectors (all of them, in RAM) ",
                      MiB(ram.refine));
    }
    return info;
  }

  std::vector<std::string> points() const override { return GridPointStrings(sweep_); }

  absl::Status SetParams(size_t point) override {
    if (point >= sweep_.size()) return absl::OutOfRangeError("FaissSystem::SetParams");
    return index_->SetParameters(sweep_[point]);
  }

  // omp_set_num_threads is per thread (each client thread has its own OpenMP ICVs), and
  // OpenBLAS's pool is global: both to 1, so T client threads use T cores.
  void PrepareClientThread() override { FaissIndex::SetThreads(1); }

  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first,
                      IoCounters* counters) override {
    counters->full_vectors_read += n * index_->RefineReadsPerQuery(k);
    return index_->Search(queries, n, k, out, first);
  }

  // Inverted lists (codes + ids) + coarse centroids + IVF-PQ's precomputed tables + a refine
  // index's raw vectors, from FAISS's own sizes (FaissIndex::RamParts).
  double RamBytes() const override { return index_ ? static_cast<double>(index_->RamBytes()) : 0; }

  bool CountsFullVectorReads() const override { return index_ && index_->has_refine(); }

 private:
  std::string name_, factory_;
  size_t train_rows_ = 0, trained_rows_ = 0;
  std::vector<GridPoint> sweep_;
  std::unique_ptr<FaissIndex> index_;
};

}  // namespace

std::unique_ptr<AnnSystem> MakeFaissSystem(std::string name, std::string factory, size_t train_rows,
                                           std::vector<GridPoint> sweep) {
  return std::make_unique<FaissSystem>(std::move(name), std::move(factory), train_rows,
                                       std::move(sweep));
}

}  // namespace shoal::bench
