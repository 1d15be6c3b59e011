// hnswlib as an `ann` bench peer: Debian's header-only hnswlib 0.6, compiled in this file
// only with -march=native (bench/CMakeLists.txt) so its AVX-512 distance kernels are used,
// as ann-benchmarks' hnswlib build does. hnswlib throws std::runtime_error: caught here.
#include <hnswlib/hnswlib.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/ann_system.h"
#include "bench/report.h"

namespace shoal::bench {
namespace {

class HnswSystem : public AnnSystem {
 public:
  HnswSystem(int m, int ef_construction, std::vector<int> efs)
      : m_(m), ef_construction_(ef_construction), efs_(std::move(efs)) {}

  std::string name() const override { return "hnswlib"; }
  std::string build_params() const override {
    return absl::StrCat("M=", m_, ";ef_construction=", ef_construction_);
  }

  absl::StatusOr<BuildInfo> Build(const Matrix& train, Metric metric, int threads) override {
    if (train.rows == 0) return absl::InvalidArgumentError("hnswlib: empty train set");
    metric_ = metric;
    dim_ = train.cols;
    if (metric == Metric::kL2) {
      space_ = std::make_unique<hnswlib::L2Space>(dim_);
    } else {
      space_ = std::make_unique<hnswlib::InnerProductSpace>(dim_);  // 1 - <q, x>
    }
    BuildInfo info;
    const double t0 = NowSeconds();
    try {
      index_ = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), train.rows, m_,
                                                                 ef_construction_);
      std::vector<float> row(dim_);
      index_->addPoint(Prepare(train.Row(0), row.data()), 0);
      std::atomic<size_t> next{1};
      auto worker = [&] {
        std::vector<float> scratch(dim_);
        for (size_t i = next++; i < train.rows; i = next++) {
          index_->addPoint(Prepare(train.Row(i), scratch.data()), i);
        }
      };
      std::vector<std::thread> pool;
      for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
      worker();
      for (std::thread& th : pool) th.join();
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("hnswlib build: ", e.what()));
    }
    info.build_seconds = NowSeconds() - t0;
    return info;
  }

  std::vector<std::string> points() const override {
    std::vector<std::string> out;
    for (int ef : efs_) out.push_back(absl::StrCat("ef=", ef));
    return out;
  }

  absl::Status SetParams(size_t point) override {
    if (point >= efs_.size()) return absl::OutOfRangeError("HnswSystem::SetParams");
    index_->setEf(efs_[point]);
    return absl::OkStatus();
  }

  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first,
                      IoCounters*) override {
    std::vector<float> scratch(dim_);
    try {
      for (size_t i = 0; i < n; ++i) {
        auto top = index_->searchKnn(Prepare(queries + i * dim_, scratch.data()), k);
        // Farthest first: fill from the back.
        for (size_t j = k; j-- > 0;) {
          const bool found = j < top.size() && !top.empty();
          out->Ids(first + i)[j] = found ? static_cast<int64_t>(top.top().second) : -1;
          out->Distances(first + i)[j] = found ? top.top().first : 0;
          if (found) top.pop();
        }
      }
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("hnswlib search: ", e.what()));
    }
    return absl::OkStatus();
  }

  // From hnswlib's members: the level-0 block (vector, links and label of every element),
  // the upper-level link lists and their pointer array, and the per-element levels. Not
  // counted: the label hash map, the per-element mutexes and the visited-list pool.
  double RamBytes() const override {
    if (!index_) return 0;
    const auto& h = *index_;
    double bytes = static_cast<double>(h.max_elements_) * h.size_data_per_element_;
    bytes += static_cast<double>(h.max_elements_) * (sizeof(char*) + sizeof(int));
    for (size_t i = 0; i < h.cur_element_count; ++i) {
      bytes += static_cast<double>(h.size_links_per_element_) * h.element_levels_[i];
    }
    return bytes;
  }

 private:
  // Cosine searches normalised vectors by inner product; L2 and inner product use them as is.
  const float* Prepare(const float* v, float* scratch) const {
    if (metric_ != Metric::kCosine) return v;
    double norm = 0;
    for (size_t j = 0; j < dim_; ++j) norm += double{v[j]} * v[j];
    const float scale = norm > 0 ? static_cast<float>(1 / std::sqrt(norm)) : 0.0f;
    for (size_t j = 0; j < dim_; ++j) scratch[j] = v[j] * scale;
    return scratch;
  }

  int m_, ef_construction_;
  std::vector<int> efs_;
  Metric metric_ = Metric::kL2;
  size_t dim_ = 0;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> index_;
};

}  // namespace

std::unique_ptr<AnnSystem> MakeHnswSystem(int m, int ef_construction, std::vector<int> efs) {
  return std::make_unique<HnswSystem>(m, ef_construction, std::move(efs));
}

}  // namespace shoal::bench
