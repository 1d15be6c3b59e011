// FAISS peers of the `ann` bench (IVF-Flat today; IVF-PQ, IVF-SQ8 are one more factory
// string), driven through the FaissIndex adapter so FAISS exceptions stay in one place.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/ann_system.h"
#include "bench/faiss_index.h"
#include "bench/report.h"

namespace shoal::bench {
namespace {

class FaissSystem : public AnnSystem {
 public:
  FaissSystem(std::string name, std::string factory, size_t train_rows, std::string param,
              std::vector<double> values)
      : name_(std::move(name)),
        factory_(std::move(factory)),
        train_rows_(train_rows),
        param_(std::move(param)),
        values_(std::move(values)) {}

  std::string name() const override { return name_; }

  std::string build_params() const override {
    return absl::StrCat("factory=", factory_, ";train_rows=", trained_rows_);
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
    return info;
  }

  std::vector<std::string> points() const override {
    std::vector<std::string> out;
    for (double v : values_) out.push_back(absl::StrFormat("%s=%g", param_, v));
    return out;
  }

  absl::Status SetParams(size_t point) override {
    if (point >= values_.size()) return absl::OutOfRangeError("FaissSystem::SetParams");
    return index_->SetParameter(param_, values_[point]);
  }

  // omp_set_num_threads is per thread (each client thread has its own OpenMP ICVs), and
  // OpenBLAS's pool is global: both to 1, so T client threads use T cores.
  void PrepareClientThread() override { FaissIndex::SetThreads(1); }

  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first,
                      IoCounters*) override {
    return index_->Search(queries, n, k, out, first);
  }

  // Inverted lists (codes + ids) + coarse centroids, from FAISS's own sizes (FaissIndex).
  double RamBytes() const override { return index_ ? static_cast<double>(index_->RamBytes()) : 0; }

 private:
  std::string name_, factory_;
  size_t train_rows_ = 0, trained_rows_ = 0;
  std::string param_;
  std::vector<double> values_;
  std::unique_ptr<FaissIndex> index_;
};

}  // namespace

std::unique_ptr<AnnSystem> MakeFaissSystem(std::string name, std::string factory, size_t train_rows,
                                           std::string param, std::vector<double> values) {
  return std::make_unique<FaissSystem>(std::move(name), std::move(factory), train_rows,
                                       std::move(param), std::move(values));
}

}  // namespace shoal::bench
