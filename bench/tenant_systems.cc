#include "bench/tenant_systems.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/bare_rocksdb_write.h"
#include "bench/report.h"
#include "shoal/filter.h"

namespace shoal::bench {
namespace {

std::string TenantName(size_t t) { return absl::StrCat("t", t); }

// One ann peer per tenant; answers map the peer's row numbers back to base rows.
class PerTenantSystem final : public TenantSystem {
 public:
  PerTenantSystem(std::string name, std::string params,
                  std::function<std::unique_ptr<AnnSystem>(size_t)> make)
      : name_(std::move(name)), params_(std::move(params)), make_(std::move(make)) {}

  std::string name() const override { return name_; }
  std::string build_params() const override { return params_; }

  absl::StatusOr<BuildInfo> Build(const Matrix& base, const TenantWorkload& w, Metric metric,
                                  int threads) override {
    w_ = &w;
    const double t0 = NowSeconds();
    Matrix rows;
    rows.cols = base.cols;
    for (const std::vector<uint32_t>& m : w.members) {
      rows.rows = m.size();
      rows.data.resize(m.size() * base.cols);
      for (size_t i = 0; i < m.size(); ++i) {
        std::copy(base.Row(m[i]), base.Row(m[i]) + base.cols, rows.data.begin() + i * base.cols);
      }
      systems_.push_back(make_(m.size()));
      SHOAL_RETURN_IF_ERROR(systems_.back()->Build(rows, metric, threads).status());
    }
    return BuildInfo{.build_seconds = NowSeconds() - t0};
  }
  std::vector<std::string> points() const override {
    return systems_.empty() ? std::vector<std::string>() : systems_[0]->points();
  }
  absl::Status SetParams(size_t point) override {
    for (auto& s : systems_) SHOAL_RETURN_IF_ERROR(s->SetParams(point));
    return absl::OkStatus();
  }
  void PrepareClientThread() override {
    if (!systems_.empty()) systems_[0]->PrepareClientThread();  // pins the library's pools
  }
  absl::Status Search(uint32_t tenant, const float* query, size_t k, Neighbors* out,
                      size_t row) override {
    // Fresh each query: a peer that finds fewer than k leaves the rest as it found them.
    local_ = Neighbors(1, k);
    IoCounters io;
    SHOAL_RETURN_IF_ERROR(systems_[tenant]->Search(query, 1, k, &local_, 0, &io));
    const std::vector<uint32_t>& m = w_->members[tenant];
    for (size_t j = 0; j < k; ++j) {
      const int64_t id = local_.ids[j];
      // (int64_t: a uint32_t row and -1 would meet as 4294967295.)
      out->Ids(row)[j] = id >= 0 && static_cast<size_t>(id) < m.size() ? int64_t{m[id]} : -1;
      out->Distances(row)[j] = local_.distances[j];
    }
    return absl::OkStatus();
  }
  double RamBytes() const override {
    double total = 0;
    for (const auto& s : systems_) total += s->RamBytes();
    return total;
  }

 private:
  std::string name_, params_;
  std::function<std::unique_ptr<AnnSystem>(size_t)> make_;
  const TenantWorkload* w_ = nullptr;
  std::vector<std::unique_ptr<AnnSystem>> systems_;
  Neighbors local_;
};

// The shared collection searched per tenant (SearchParams::tenant) or with a tag filter.
class ShoalView final : public TenantSystem {
 public:
  ShoalView(ShoalTenantIndex* index, bool filter, std::vector<double> recalls)
      : index_(index), filter_(filter), recalls_(std::move(recalls)) {}

  std::string name() const override { return filter_ ? "shoal-filter" : "shoal-tenant"; }
  std::string build_params() const override {
    return filter_ ? "shared index + HasTag(tenant) filter" : "SearchParams::tenant";
  }
  absl::StatusOr<BuildInfo> Build(const Matrix&, const TenantWorkload& w, Metric, int) override {
    filters_.clear();
    for (size_t t = 0; t < w.members.size(); ++t) filters_.push_back(HasTag(TenantName(t)));
    const ShoalTenantLoad& l = index_->load();
    return BuildInfo{.build_seconds = l.build_seconds, .load_seconds = l.load_seconds};
  }
  std::vector<std::string> points() const override {
    std::vector<std::string> out;
    for (double r : recalls_) out.push_back(absl::StrCat("target_recall=", r));
    return out;
  }
  absl::Status SetParams(size_t point) override {
    if (point >= recalls_.size()) return absl::OutOfRangeError("ShoalView::SetParams");
    recall_ = static_cast<float>(recalls_[point]);
    return absl::OkStatus();
  }
  absl::Status Search(uint32_t tenant, const float* query, size_t k, Neighbors* out,
                      size_t row) override {
    SearchParams p;
    p.target_recall = recall_;
    if (filter_) {
      p.filter = &filters_[tenant];
    } else {
      p.tenant = TenantName(tenant);
    }
    // A tenant's search counts them anyway (a filtered one would also look up its warnings).
    SearchStats stats;
    if (!filter_) p.stats = &stats;
    SHOAL_RETURN_IF_ERROR(index_->collection().Search(query, 1, k, out, row, std::move(p)));
    if (postings_.size() <= row) postings_.resize(row + 1);
    postings_[row] = static_cast<uint32_t>(stats.postings_read);
    return absl::OkStatus();
  }
  std::vector<uint32_t> PostingsPerQuery() const override {
    return filter_ ? std::vector<uint32_t>() : postings_;
  }
  // Both views hold the same collection, measured once loaded (before searches fill caches):
  // the filter view's RAM is the shared index alone, the tenant view's adds the tenants'.
  double RamBytes() const override {
    const ShoalTenantLoad& l = index_->load();
    return l.shared_ram_bytes + (filter_ ? 0 : l.tenant_ram_bytes);
  }
  double SsdBytes() const override { return index_->SsdBytes(); }

 private:
  ShoalTenantIndex* index_;
  bool filter_;
  std::vector<double> recalls_;
  float recall_ = 0;
  std::vector<Filter> filters_;
  std::vector<uint32_t> postings_;  // by query row, the last pass's
};

}  // namespace

std::unique_ptr<TenantSystem> MakePerTenantSystem(
    std::string name, std::string params,
    std::function<std::unique_ptr<AnnSystem>(size_t rows)> make) {
  return std::make_unique<PerTenantSystem>(std::move(name), std::move(params), std::move(make));
}

absl::StatusOr<std::unique_ptr<ShoalTenantIndex>> ShoalTenantIndex::Create(
    const std::string& spec, std::vector<double> recalls) {
  std::unique_ptr<ShoalTenantIndex> index(new ShoalTenantIndex(spec, std::move(recalls)));
  return index;
}

absl::StatusOr<ShoalTenantLoad> ShoalTenantIndex::Load(const Matrix& base, const TenantWorkload& w,
                                                       Metric metric, size_t grant_samples) {
  SHOAL_ASSIGN_OR_RETURN(
      collection_, ShoalCollection::Create(Options{}, static_cast<uint32_t>(base.cols), metric));
  std::vector<std::vector<std::string>> tags(base.rows);
  for (size_t t = 0; t < w.members.size(); ++t) {
    for (uint32_t row : w.members[t]) tags[row].push_back(TenantName(t));
  }
  DB& db = collection_->db();
  const char* name = ShoalCollection::kName;
  double t0 = NowSeconds();
  std::vector<Record> records;
  for (size_t first = 0; first < base.rows; first += 10000) {
    const size_t n = std::min<size_t>(10000, base.rows - first);
    records.assign(n, Record());
    for (size_t i = 0; i < n; ++i) {
      records[i].key = uint64_t{first + i};
      records[i].vector.assign(base.Row(first + i), base.Row(first + i) + base.cols);
      records[i].tags = std::move(tags[first + i]);
    }
    SHOAL_RETURN_IF_ERROR(db.Upsert(name, records, {}));
  }
  load_.load_seconds = NowSeconds() - t0;
  t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(db.BuildIndex(name, spec_));
  SHOAL_RETURN_IF_ERROR(db.FlushIndexUpdates(name));
  load_.build_seconds = NowSeconds() - t0;
  load_.shared_ram_bytes = RamBytes();
  // The bare store is written the same grant rows as Shoal's catalog, call by call.
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<BareRocksWrite> bare, BareRocksWrite::Open(0));
  SHOAL_RETURN_IF_ERROR(
      GrantAll(w, bare.get(), &load_.grant_batched_us, &load_.bare_grant_batched_us));
  load_.tenant_ram_bytes = RamBytes() - load_.shared_ram_bytes;
  SHOAL_RETURN_IF_ERROR(TimeSingleGrants(w, grant_samples, base.rows, *bare));
  SHOAL_RETURN_IF_ERROR(TimeRegrants(w, 100, *bare));
  return load_;
}

absl::Status ShoalTenantIndex::GrantAll(const TenantWorkload& w, BareRocksWrite* bare,
                                        double* us_per_key, double* bare_us_per_key) {
  DB& db = collection_->db();
  const char* name = ShoalCollection::kName;
  for (size_t t = 0; t < w.members.size(); ++t) {
    SHOAL_RETURN_IF_ERROR(db.CreateTenant(name, {TenantName(t), {}}));
  }
  tenants_ = w.members.size();
  double seconds = 0, bare_seconds = 0;
  for (size_t t = 0; t < w.members.size(); ++t) {
    SHOAL_RETURN_IF_ERROR(
        SetAccessBatched(t, w.members[t], /*grant=*/true, &seconds, bare, &bare_seconds));
  }
  const double keys = static_cast<double>(std::max<size_t>(1, w.Memberships()));
  *us_per_key = seconds * 1e6 / keys;
  if (bare_us_per_key != nullptr) *bare_us_per_key = bare_seconds * 1e6 / keys;
  return absl::OkStatus();
}

absl::Status ShoalTenantIndex::SetAccessBatched(size_t tenant, const std::vector<uint32_t>& rows,
                                                bool grant, double* seconds, BareRocksWrite* bare,
                                                double* bare_seconds) {
  DB& db = collection_->db();
  std::vector<Key> keys;
  for (size_t first = 0; first < rows.size(); first += 10000) {
    const size_t end = std::min(rows.size(), first + 10000);
    keys.assign(rows.begin() + first, rows.begin() + end);
    const double t0 = ThreadCpuSeconds();  // the call's work is all on this thread
    SHOAL_RETURN_IF_ERROR(grant ? db.Grant(ShoalCollection::kName, TenantName(tenant), keys, {})
                                : db.Revoke(ShoalCollection::kName, TenantName(tenant), keys, {}));
    *seconds += ThreadCpuSeconds() - t0;
    if (bare != nullptr) {
      *bare_seconds +=
          bare->TimeBatch(grant, static_cast<uint32_t>(tenant),
                          std::span<const uint32_t>(rows).subspan(first, end - first)) /
          1e6;
    }
  }
  return absl::OkStatus();
}

absl::Status ShoalTenantIndex::TimeRegrants(const TenantWorkload& w, size_t tenants,
                                            BareRocksWrite& bare) {
  double revoke = 0, grant = 0, bare_revoke = 0, bare_grant = 0;
  size_t keys = 0;
  for (size_t i = 0; i < tenants && i < w.members.size(); ++i) {
    const size_t t = i * w.members.size() / tenants;  // largest to smallest
    SHOAL_RETURN_IF_ERROR(
        SetAccessBatched(t, w.members[t], /*grant=*/false, &revoke, &bare, &bare_revoke));
    SHOAL_RETURN_IF_ERROR(
        SetAccessBatched(t, w.members[t], /*grant=*/true, &grant, &bare, &bare_grant));
    keys += w.members[t].size();
  }
  const double n = static_cast<double>(std::max<size_t>(1, keys));
  load_.revoke_batched_us = revoke * 1e6 / n;
  load_.regrant_batched_us = grant * 1e6 / n;
  load_.bare_revoke_batched_us = bare_revoke * 1e6 / n;
  load_.bare_regrant_batched_us = bare_grant * 1e6 / n;
  return absl::OkStatus();
}

absl::Status ShoalTenantIndex::TimeSingleGrants(const TenantWorkload& w, size_t n, size_t rows,
                                                BareRocksWrite& bare) {
  DB& db = collection_->db();
  const char* name = ShoalCollection::kName;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> any_tenant(0, w.members.size() - 1);
  std::uniform_int_distribution<uint32_t> any_row(0, static_cast<uint32_t>(rows - 1));
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  while (pairs.size() < n) {
    const uint32_t t = static_cast<uint32_t>(any_tenant(rng)), row = any_row(rng);
    if (!w.Sees(t, row)) pairs.emplace_back(t, row);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (bool grant : {true, false}) {
    for (const auto& [t, row] : pairs) {
      const Key key = uint64_t{row};
      const double t0 = NowSeconds();
      SHOAL_RETURN_IF_ERROR(grant ? db.Grant(name, TenantName(t), {&key, 1}, {})
                                  : db.Revoke(name, TenantName(t), {&key, 1}, {}));
      (grant ? load_.grant_us : load_.revoke_us).push_back((NowSeconds() - t0) * 1e6);
      (grant ? load_.bare_put_us : load_.bare_delete_us).push_back(bare.Time(grant, false, t, row));
      (grant ? load_.bare_put_marker_us : load_.bare_delete_marker_us)
          .push_back(bare.Time(grant, true, t + 100000, row));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> ShoalTenantIndex::ReplaceTenants(const TenantWorkload& w) {
  DB& db = collection_->db();
  for (size_t t = 0; t < tenants_; ++t) {
    SHOAL_RETURN_IF_ERROR(db.DropTenant(ShoalCollection::kName, TenantName(t), {}).status());
  }
  // The caches searches filled count too: the tenants' share is measured against now.
  const double before = RamBytes();
  double us = 0;
  SHOAL_RETURN_IF_ERROR(GrantAll(w, nullptr, &us, nullptr));
  return RamBytes() - before;
}

std::unique_ptr<TenantSystem> ShoalTenantIndex::TenantView() {
  return std::make_unique<ShoalView>(this, /*filter=*/false, recalls_);
}
std::unique_ptr<TenantSystem> ShoalTenantIndex::FilterView() {
  return std::make_unique<ShoalView>(this, /*filter=*/true, recalls_);
}

double ShoalTenantIndex::RamBytes() const {
  absl::StatusOr<CollectionInfo> info =
      collection_->db().DescribeCollection(ShoalCollection::kName);
  return info.ok() ? static_cast<double>(info->index_ram_bytes) : 0;
}

double ShoalTenantIndex::TenantRamBytes() const {
  absl::StatusOr<CollectionInfo> info =
      collection_->db().DescribeCollection(ShoalCollection::kName);
  return info.ok() ? static_cast<double>(info->tenant_ram_bytes) : 0;
}

double ShoalTenantIndex::SsdBytes() const {
  std::error_code ec;
  double bytes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(collection_->dir(), ec)) {
    if (e.is_regular_file(ec)) bytes += static_cast<double>(e.file_size(ec));
  }
  return bytes;
}

}  // namespace shoal::bench
