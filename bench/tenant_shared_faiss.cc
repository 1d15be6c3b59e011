// "One shared index with a tenant filter" as FAISS users have it: one FAISS index over every
// base row, each tenant's search restricted by a faiss::IDSelectorBitmap of the rows it sees
// (FAISS 1.7.3 SearchParameters; bench/tenant_systems.h).

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/faiss_index.h"
#include "bench/report.h"
#include "bench/tenant_systems.h"

namespace shoal::bench {
namespace {

class SharedFaissSystem final : public TenantSystem {
 public:
  SharedFaissSystem(std::string name, std::string factory, GridPoint build,
                    std::vector<GridPoint> sweep)
      : name_(std::move(name)),
        factory_(std::move(factory)),
        build_(std::move(build)),
        sweep_(std::move(sweep)) {}

  std::string name() const override { return name_; }
  std::string build_params() const override {
    std::string out = absl::StrCat("factory=", factory_);
    if (!build_.empty()) absl::StrAppend(&out, ";", GridPointString(build_));
    absl::StrAppend(&out, ";filter=IDSelectorBitmap per tenant");
    if (index_ != nullptr) {
      absl::StrAppendFormat(&out, ";RAM=index %.1f MiB + bitmaps %.1f MiB",
                            index_->RamBytes() / double{1 << 20}, BitmapBytes() / double{1 << 20});
    }
    return out;
  }

  absl::StatusOr<BuildInfo> Build(const Matrix& base, const TenantWorkload& w, Metric metric,
                                  int threads) override {
    FaissIndex::SetThreads(threads);
    const double t0 = NowSeconds();
    SHOAL_ASSIGN_OR_RETURN(index_, FaissIndex::Create(factory_, base.cols, metric));
    SHOAL_RETURN_IF_ERROR(index_->SetParameters(build_));
    SHOAL_RETURN_IF_ERROR(index_->Train(base.data.data(), base.rows));
    SHOAL_RETURN_IF_ERROR(index_->Add(base.data.data(), base.rows));
    bitmaps_.assign(w.members.size(), std::vector<uint8_t>((base.rows + 7) / 8, 0));
    for (size_t t = 0; t < w.members.size(); ++t) {
      for (uint32_t r : w.members[t]) bitmaps_[t][r / 8] |= static_cast<uint8_t>(1u << (r % 8));
    }
    return BuildInfo{.build_seconds = NowSeconds() - t0};
  }

  std::vector<std::string> points() const override { return GridPointStrings(sweep_); }
  absl::Status SetParams(size_t point) override {
    if (point >= sweep_.size()) return absl::OutOfRangeError("SharedFaissSystem::SetParams");
    return index_->SetParameters(sweep_[point]);
  }
  // One query at a time from one client thread: no OpenMP or OpenBLAS pool behind it.
  void PrepareClientThread() override { FaissIndex::SetThreads(1); }

  absl::Status Search(uint32_t tenant, const float* query, size_t k, Neighbors* out,
                      size_t row) override {
    local_ = Neighbors(1, k);  // FAISS pads with -1 when the filter admits fewer than k
    SHOAL_RETURN_IF_ERROR(index_->SearchAmong(query, k, bitmaps_[tenant].data(), &local_, 0));
    for (size_t j = 0; j < k; ++j) {
      out->Ids(row)[j] = local_.ids[j];
      out->Distances(row)[j] = local_.distances[j];
    }
    return absl::OkStatus();
  }
  // The shared index (vectors, HNSW graph or IVF lists and centroids) and the tenants' bitmaps.
  double RamBytes() const override {
    return index_ == nullptr ? 0 : static_cast<double>(index_->RamBytes() + BitmapBytes());
  }

 private:
  size_t BitmapBytes() const {
    size_t bytes = 0;
    for (const auto& b : bitmaps_) bytes += b.size();
    return bytes;
  }

  std::string name_, factory_;
  GridPoint build_;
  std::vector<GridPoint> sweep_;
  std::unique_ptr<FaissIndex> index_;
  std::vector<std::vector<uint8_t>> bitmaps_;  // per tenant: bit r = base row r
  Neighbors local_;
};

}  // namespace

std::unique_ptr<TenantSystem> MakeSharedFaissSystem(std::string name, std::string factory,
                                                    GridPoint build, std::vector<GridPoint> sweep) {
  return std::make_unique<SharedFaissSystem>(std::move(name), std::move(factory), std::move(build),
                                             std::move(sweep));
}

}  // namespace shoal::bench
