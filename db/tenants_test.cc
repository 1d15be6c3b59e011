// Tenants through the public API (shoal/db.h "Tenants"): create / list / describe / drop,
// ownership and grants, tenant-restricted Get / Search / Delete, quotas, errors, reopen, and
// the same with an SSD index. The randomized model test is tenants_property_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/test_seed.h"
#include "shoal/db.h"
#include "shoal/filter.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

Record R(uint64_t key, std::vector<float> v) {
  Record r;
  r.key = key;
  r.vector = std::move(v);
  return r;
}

WriteOptions As(std::string tenant) {
  WriteOptions o;
  o.tenant = std::move(tenant);
  return o;
}

class TenantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tenants_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Reopen();
    ASSERT_TRUE(db_->CreateCollection({"c", 2, Metric::kL2}).ok());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    db_.reset();
    auto db = DB::Open(dir_, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  // Keys of the k nearest hits for `tenant` to (x, y).
  std::vector<uint64_t> SearchKeys(const std::string& tenant, float x, float y, uint32_t k = 10,
                                   const Filter* filter = nullptr) {
    SearchParams p;
    p.k = k;
    p.tenant = tenant;
    p.filter = filter;
    const std::vector<float> q = {x, y};
    auto hits = db_->Search("c", q, p);
    EXPECT_TRUE(hits.ok()) << hits.status();
    std::vector<uint64_t> keys;
    if (hits.ok()) {
      for (const Hit& h : (*hits)[0]) keys.push_back(std::get<uint64_t>(h.key));
    }
    return keys;
  }
  std::vector<bool> Visible(const std::string& tenant, std::vector<Key> keys) {
    ReadOptions o;
    o.tenant = tenant;
    auto got = db_->Get("c", keys, o);
    EXPECT_TRUE(got.ok()) << got.status();
    std::vector<bool> out;
    for (const auto& r : *got) out.push_back(r.has_value());
    return out;
  }
  // Two tenants: a owns 1, 2; b owns 3; key 4 has no owner.
  void TwoTenants() {
    ASSERT_TRUE(db_->CreateTenant("c", {"a", {}}).ok());
    ASSERT_TRUE(db_->CreateTenant("c", {"b", {}}).ok());
    ASSERT_TRUE(db_->Upsert("c", std::vector{R(1, {0, 0}), R(2, {1, 0})}, As("a")).ok());
    ASSERT_TRUE(db_->Upsert("c", std::vector{R(3, {0, 1})}, As("b")).ok());
    ASSERT_TRUE(db_->Upsert("c", std::vector{R(4, {0.1f, 0})}, {}).ok());
  }
  // Two tenants over an SSD index built from `spec`, then writes in its buffer.
  void SsdIndexCase(const std::string& spec);
  std::string dir_;
  std::unique_ptr<DB> db_;
};

TEST_F(TenantsTest, CreateListDescribeDrop) {
  TenantSpec spec{"acme", {}};
  spec.quotas.max_vectors = 5;
  ASSERT_TRUE(db_->CreateTenant("c", spec).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"beta", {}}).ok());
  EXPECT_EQ(db_->CreateTenant("c", spec).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(db_->CreateTenant("c", {"bad name", {}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(db_->CreateTenant("nope", spec).code(), absl::StatusCode::kNotFound);
  auto page = db_->ListTenants("c", 1, "");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->tenants.size(), 1u);
  EXPECT_EQ(page->tenants[0].name, "acme");
  EXPECT_EQ(page->tenants[0].quotas.max_vectors, 5u);
  auto next = db_->ListTenants("c", 1, page->next_page_token);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->tenants.size(), 1u);
  EXPECT_EQ(next->tenants[0].name, "beta");
  EXPECT_EQ(next->next_page_token, "");
  EXPECT_EQ(db_->ListTenants("c", 0, "").status().code(), absl::StatusCode::kInvalidArgument);
  Reopen();
  auto info = db_->DescribeTenant("c", "acme");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->quotas.max_vectors, 5u);
  EXPECT_EQ(info->state, TenantState::kActive);
  ASSERT_TRUE(db_->DropTenant("c", "acme", {}).ok());
  EXPECT_EQ(db_->DescribeTenant("c", "acme").status().code(), absl::StatusCode::kNotFound);
  Reopen();
  EXPECT_EQ(db_->DescribeTenant("c", "acme").status().code(), absl::StatusCode::kNotFound);
  // A tenant created again under the same name starts empty.
  ASSERT_TRUE(db_->CreateTenant("c", {"acme", {}}).ok());
  EXPECT_EQ(*db_->CountByTenant("c", "acme", false), 0u);
}

TEST_F(TenantsTest, EachTenantSeesOnlyWhatItOwnsOrWasGranted) {
  TwoTenants();
  EXPECT_THAT(SearchKeys("a", 0, 0), UnorderedElementsAre(1, 2));
  EXPECT_THAT(SearchKeys("b", 0, 0), ElementsAre(3));
  EXPECT_THAT(SearchKeys("", 0, 0), UnorderedElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Visible("a", {uint64_t{1}, uint64_t{3}, uint64_t{4}, uint64_t{9}}),
              ElementsAre(true, false, false, false));
  const std::vector<Key> three = {uint64_t{3}};
  ASSERT_TRUE(db_->Grant("c", "a", three, {}).ok());
  EXPECT_THAT(SearchKeys("a", 0, 1), ElementsAre(3, 1, 2));
  EXPECT_THAT(*db_->ListKeyTenants("c", uint64_t{3}), ElementsAre("b", "a"));
  EXPECT_EQ(*db_->CountByTenant("c", "a", /*owned_only=*/false), 3u);
  EXPECT_EQ(*db_->CountByTenant("c", "a", /*owned_only=*/true), 2u);
  Reopen();
  EXPECT_THAT(SearchKeys("a", 0, 1), ElementsAre(3, 1, 2));
  ASSERT_TRUE(db_->Revoke("c", "a", three, {}).ok());
  EXPECT_THAT(SearchKeys("a", 0, 1), ElementsAre(1, 2));
  Reopen();
  EXPECT_THAT(SearchKeys("a", 0, 1), ElementsAre(1, 2));
  EXPECT_THAT(*db_->ListKeyTenants("c", uint64_t{4}), ElementsAre());
}

TEST_F(TenantsTest, GrantAndRevokeErrors) {
  TwoTenants();
  const std::vector<Key> one = {uint64_t{1}};
  const std::vector<Key> missing = {uint64_t{1}, uint64_t{99}};
  EXPECT_TRUE(db_->Grant("c", "a", one, {}).ok());  // to the owner: nothing changes
  EXPECT_EQ(db_->Revoke("c", "a", one, {}).code(), absl::StatusCode::kFailedPrecondition);
  absl::Status s = db_->Grant("c", "b", missing, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("keys[1]"));
  EXPECT_THAT(Visible("b", {uint64_t{1}}), ElementsAre(false));  // all or nothing
  EXPECT_EQ(db_->Grant("c", "zz", one, {}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(db_->ListKeyTenants("c", uint64_t{99}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TenantsTest, DeleteWithATenantTouchesOnlyItsOwnKeys) {
  TwoTenants();
  const std::vector<Key> three = {uint64_t{3}};
  ASSERT_TRUE(db_->Grant("c", "a", three, {}).ok());
  // Granted, not owned: PermissionDenied; invisible: absent.
  EXPECT_EQ(db_->Delete("c", three, As("a")).status().code(), absl::StatusCode::kPermissionDenied);
  const std::vector<Key> four = {uint64_t{4}};
  EXPECT_EQ(*db_->Delete("c", four, As("a")), 0u);
  EXPECT_THAT(Visible("", {uint64_t{4}}), ElementsAre(true));
  // The owner's delete removes it for everyone it was granted to.
  EXPECT_EQ(*db_->Delete("c", three, As("b")), 1u);
  EXPECT_THAT(SearchKeys("a", 0, 1), ElementsAre(1, 2));
  EXPECT_EQ(*db_->CountByTenant("c", "a", false), 2u);
}

TEST_F(TenantsTest, UpsertOverAnotherTenantsKeyIsDeniedAndRewritesKeepGrants) {
  TwoTenants();
  EXPECT_EQ(db_->Upsert("c", std::vector{R(3, {5, 5})}, As("a")).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(db_->Upsert("c", std::vector{R(4, {5, 5})}, As("a")).code(),
            absl::StatusCode::kPermissionDenied);  // unowned: not the tenant's either
  const std::vector<Key> three = {uint64_t{3}};
  ASSERT_TRUE(db_->Grant("c", "a", three, {}).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(3, {7, 7})}, As("b")).ok());
  EXPECT_THAT(*db_->ListKeyTenants("c", uint64_t{3}), ElementsAre("b", "a"));
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(3, {8, 8})}, {}).ok());  // untenanted: keeps owner
  EXPECT_THAT(*db_->ListKeyTenants("c", uint64_t{3}), ElementsAre("b", "a"));
  EXPECT_THAT(SearchKeys("a", 8, 8, 1), ElementsAre(3));
  EXPECT_EQ(db_->Upsert("c", std::vector{R(5, {0, 0})}, As("nobody")).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TenantsTest, DeleteByTenantAndDropTenantRemoveOwnedRecordsEverywhere) {
  TwoTenants();
  const std::vector<Key> one = {uint64_t{1}};
  ASSERT_TRUE(db_->Grant("c", "b", one, {}).ok());
  EXPECT_EQ(*db_->DeleteByTenant("c", "a", {}), 2u);
  EXPECT_THAT(SearchKeys("b", 0, 0), ElementsAre(3));
  EXPECT_THAT(SearchKeys("", 0, 0), UnorderedElementsAre(3, 4));
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(5, {0, 0})}, As("a")).ok());
  const std::vector<Key> three = {uint64_t{3}};
  ASSERT_TRUE(db_->Grant("c", "a", three, {}).ok());
  EXPECT_EQ(*db_->DropTenant("c", "b", {}), 1u);  // key 3, granted to a too
  EXPECT_THAT(SearchKeys("a", 0, 0), ElementsAre(5));
  Reopen();
  EXPECT_THAT(SearchKeys("a", 0, 0), ElementsAre(5));
  EXPECT_THAT(SearchKeys("", 0, 0), UnorderedElementsAre(4, 5));
  VerifyReport report;
  EXPECT_TRUE(db_->Verify("c", &report).ok()) << report.problems.size();
}

TEST_F(TenantsTest, QuotasRefuseWritesAndSearchesNamingTheQuota) {
  TenantSpec spec{"small", {}};
  spec.quotas.max_vectors = 2;
  ASSERT_TRUE(db_->CreateTenant("c", spec).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(1, {0, 0}), R(2, {0, 0})}, As("small")).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(2, {1, 1})}, As("small")).ok());  // a rewrite
  absl::Status s = db_->Upsert("c", std::vector{R(3, {0, 0})}, As("small"));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("max_vectors"));
  EXPECT_THAT(s.message(), HasSubstr("'small'"));
  TenantQuotas q;
  q.max_bytes = 10;
  ASSERT_TRUE(db_->SetTenantQuotas("c", "small", q).ok());
  s = db_->Upsert("c", std::vector{R(3, {0, 0})}, As("small"));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("max_bytes"));
  q = {};
  q.max_searches_per_second = 1;
  ASSERT_TRUE(db_->SetTenantQuotas("c", "small", q).ok());
  SearchParams p;
  p.tenant = "small";
  const std::vector<float> query = {0, 0};
  ASSERT_TRUE(db_->Search("c", query, p).ok());
  auto refused = db_->Search("c", query, p);  // the bucket holds one second's worth: 1
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("max_searches_per_second"));
  q.max_searches_per_second = -1;
  EXPECT_EQ(db_->SetTenantQuotas("c", "small", q).code(), absl::StatusCode::kInvalidArgument);
  auto info = db_->DescribeTenant("c", "small");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->searches, 1u);
  EXPECT_EQ(info->vectors_owned, 2u);
  EXPECT_GT(info->bytes_owned, 0u);
}

// Tenant ids are bytes of row keys: 255 ends in 0xff, and the range of its rows must still end
// after it (found by the property test).
TEST_F(TenantsTest, DropsATenantWhoseIdEndsInAnFFByte) {
  for (int t = 1; t <= 256; ++t) {
    ASSERT_TRUE(db_->CreateTenant("c", {"t" + std::to_string(t), {}}).ok());
  }
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(1, {0, 0})}, As("t255")).ok());
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(2, {0, 0})}, As("t256")).ok());
  EXPECT_EQ(*db_->DropTenant("c", "t255", {}), 1u);
  Reopen();
  EXPECT_EQ(*db_->CountByTenant("c", "t256", true), 1u);
  auto page = db_->ListTenants("c", 10000, "");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->tenants.size(), 255u);
  VerifyReport report;
  EXPECT_TRUE(db_->Verify("c", &report).ok());
}

// Thousands of tenants must be cheap: an empty tenant costs its entry (name, quotas, search
// statistics), its place in the two maps that find it and in the access table; the collection's
// index RAM counts them.
TEST_F(TenantsTest, AnEmptyTenantCostsAFewHundredBytesOfIndexRam) {
  ASSERT_TRUE(db_->CreateTenant("c", {"first"}).ok());
  const CollectionInfo first = *db_->DescribeCollection("c");
  const uint64_t one = first.index_ram_bytes;
  constexpr int kTenants = 300;
  for (int i = 0; i < kTenants; ++i) {
    ASSERT_TRUE(db_->CreateTenant("c", {"tenant-" + std::to_string(i)}).ok());
  }
  const CollectionInfo info = *db_->DescribeCollection("c");
  const uint64_t per_tenant = (info.index_ram_bytes - one) / kTenants;
  EXPECT_GT(per_tenant, 100u);  // counted at all
  // All of it the tenants' (what the rest of the index holds did not change).
  EXPECT_EQ(info.tenant_ram_bytes - first.tenant_ram_bytes, info.index_ram_bytes - one);
  // (Entries keyed by a copy of the name, a token bucket in each: ~340 bytes a tenant.)
  EXPECT_LE(per_tenant, 260u) << per_tenant;
}

TEST_F(TenantsTest, StateIsDurable) {
  ASSERT_TRUE(db_->CreateTenant("c", {"t", {}}).ok());
  ASSERT_TRUE(db_->SetTenantState("c", "t", TenantState::kInactive).ok());
  Reopen();
  EXPECT_EQ(db_->DescribeTenant("c", "t")->state, TenantState::kInactive);
  EXPECT_EQ(db_->SetTenantState("c", "t", static_cast<TenantState>(9)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TenantsTest, FiltersAndTenantsCombine) {
  TwoTenants();
  std::vector<Record> more = {R(10, {0, 0}), R(11, {0, 0})};
  more[0].tags = {"red"};
  ASSERT_TRUE(db_->Upsert("c", more, As("a")).ok());
  const Filter red = HasTag("red");
  EXPECT_THAT(SearchKeys("a", 0, 0, 10, &red), ElementsAre(10));
  EXPECT_THAT(SearchKeys("b", 0, 0, 10, &red), ElementsAre());
}

// A tenant of few ids (at most 1/64 of the live ones) checks a filter id by id against the
// attribute index; a larger one checks its scan's candidates so too, and estimates how many of
// its ids pass. Both return exactly their own records that pass, from the write buffer and from
// the SSD index.
TEST_F(TenantsTest, FiltersOnSmallAndLargeTenantsPassExactlyTheirOwnMatchingRecords) {
  std::mt19937 rng(base::TestSeed());
  std::uniform_real_distribution<float> u(-1, 1);
  const std::map<std::string, uint64_t> sizes = {{"small", 20}, {"large", 3000}};
  std::map<std::string, std::vector<Record>> owned;
  uint64_t key = 0;
  for (const auto& [tenant, size] : sizes) {
    ASSERT_TRUE(db_->CreateTenant("c", {tenant, {}}).ok());
    for (uint64_t i = 0; i < size; ++i, ++key) {
      Record r = R(key, {u(rng), u(rng)});
      r.attributes = {{"price", int64_t(rng() % 10)}, {"kind", absl::StrCat("k", rng() % 3)}};
      if (rng() % 4 == 0) r.tags = {"red"};
      owned[tenant].push_back(r);
    }
    ASSERT_TRUE(db_->Upsert("c", owned[tenant], As(tenant)).ok());
  }
  auto price = [](const Record& r) { return std::get<int64_t>(r.attributes.at("price")); };
  auto kind = [](const Record& r) { return std::get<std::string>(r.attributes.at("kind")); };
  auto red = [](const Record& r) { return !r.tags.empty(); };
  const std::vector<std::pair<Filter, std::function<bool(const Record&)>>> filters = {
      {Range("price", 2, 5), [&](const Record& r) { return price(r) >= 2 && price(r) <= 5; }},
      {Eq("price", int64_t{7}), [&](const Record& r) { return price(r) == 7; }},
      {Eq("kind", "k1"), [&](const Record& r) { return kind(r) == "k1"; }},
      {HasTag("red"), red},
      {And({Eq("kind", "k2"), Range("price", 0, 4)}),
       [&](const Record& r) { return kind(r) == "k2" && price(r) <= 4; }},
      {Or({HasTag("red"), Eq("price", int64_t{1})}),
       [&](const Record& r) { return red(r) || price(r) == 1; }},
      {Not(HasTag("red")), [&](const Record& r) { return !red(r); }},
      // Leaves that match more ids together than the large tenant holds twice over: it lists
      // its own ids through the filter id by id, not through the filter's bitmap.
      {And({Range("price", 0, 9), Range("price", 1, 9), Range("price", 0, 8), Eq("kind", "k1")}),
       [&](const Record& r) { return price(r) >= 1 && price(r) <= 8 && kind(r) == "k1"; }},
      {HasTag("blue"), [](const Record&) { return false; }},
  };
  for (bool indexed : {false, true}) {
    if (indexed) {
      ASSERT_TRUE(db_->BuildIndex("c", "auto").ok());
    }
    for (const auto& [tenant, records] : owned) {
      for (size_t f = 0; f < filters.size(); ++f) {
        std::vector<uint64_t> want;
        for (const Record& r : records) {
          if (filters[f].second(r)) want.push_back(std::get<uint64_t>(r.key));
        }
        std::vector<uint64_t> got = SearchKeys(tenant, 0, 0, 4000, &filters[f].first);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, want) << tenant << " filter " << f << " indexed " << indexed;
        // The nearest 10 (scanned, for the large tenant): as many as pass, each one that does.
        std::vector<uint64_t> nearest = SearchKeys(tenant, 0.5f, 0.5f, 10, &filters[f].first);
        EXPECT_EQ(nearest.size(), std::min<size_t>(10, want.size())) << tenant << " filter " << f;
        for (uint64_t k : nearest) {
          EXPECT_TRUE(std::binary_search(want.begin(), want.end(), k)) << tenant << " key " << k;
        }
      }
    }
  }
}

// A tenant holding one id in 300 of 200,000: its ids are checked against a bitmap over their
// whole span (made on the first check), and its answers are its own nearest, exactly.
TEST_F(TenantsTest, ASparseTenantOverAWideIdSpanSeesExactlyItsOwnNearest) {
  ASSERT_TRUE(db_->CreateTenant("c", {"thin", {}}).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"rest", {}}).ok());
  constexpr uint64_t kRecords = 200000, kEvery = 300;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::pair<uint64_t, std::vector<float>>> thin;
  for (uint64_t first = 0; first < kRecords; first += 10000) {
    std::vector<Record> mine, others;
    for (uint64_t key = first; key < first + 10000; ++key) {
      Record r = R(key, {u(rng), u(rng)});
      if (key % kEvery == 0) {
        thin.emplace_back(key, r.vector);
        mine.push_back(std::move(r));
      } else {
        others.push_back(std::move(r));
      }
    }
    ASSERT_TRUE(db_->Upsert("c", mine, As("thin")).ok());
    ASSERT_TRUE(db_->Upsert("c", others, As("rest")).ok());
  }
  for (int i = 0; i < 20; ++i) {
    const float x = u(rng), y = u(rng);
    std::vector<std::pair<float, uint64_t>> exact;
    for (const auto& [key, v] : thin) {
      exact.emplace_back((v[0] - x) * (v[0] - x) + (v[1] - y) * (v[1] - y), key);
    }
    std::partial_sort(exact.begin(), exact.begin() + 10, exact.end());
    std::vector<uint64_t> want;
    for (size_t j = 0; j < 10; ++j) want.push_back(exact[j].second);
    EXPECT_EQ(SearchKeys("thin", x, y), want) << "query " << i;
  }
}

TEST_F(TenantsTest, TenantSearchOverAnSsdIndexAndItsBuffer) {
  SsdIndexCase("spann:centroid_ratio=0.05,replicas=2,seed=1");
}

TEST_F(TenantsTest, TenantSearchOverAQuantizedSsdIndex) {
  SsdIndexCase("spann:centroid_ratio=0.05,replicas=2,seed=1,quant=sq8");
}

// A searched tenant's ids grouped by leaf (tenants/tenant_tree.h: what its members-first scans
// take instead of reading postings' ids) are tenant RAM: made by its first search, 4 bytes an
// id, kept for the next search, dropped by a change to the tenant.
TEST_F(TenantsTest, ATenantsIdsByLeafAreTenantRamUntilItChanges) {
  // 32-d clusters, the tenant a seventh of every one: thin in each leaf, so its scans take
  // members first (the vector cache holds every vector).
  constexpr size_t kDim = 32, kRows = 8000;
  ASSERT_TRUE(db_->CreateCollection({"w", kDim, Metric::kL2}).ok());
  ASSERT_TRUE(db_->CreateTenant("w", {"thin", {}}).ok());
  std::mt19937 rng(base::TestSeed());
  std::normal_distribution<float> normal(0, 1);
  std::vector<std::vector<float>> centres(16, std::vector<float>(kDim));
  for (auto& c : centres) {
    for (float& x : c) x = 4 * normal(rng);
  }
  std::vector<Record> thin, rest;
  for (uint64_t i = 0; i < kRows; ++i) {
    std::vector<float> v(kDim);
    for (size_t j = 0; j < kDim; ++j) v[j] = centres[i % 16][j] + normal(rng);
    (i % 7 == 0 ? thin : rest).push_back(R(i, std::move(v)));
  }
  const WriteOptions as = As("thin");
  ASSERT_TRUE(db_->Upsert("w", thin, as).ok());
  ASSERT_TRUE(db_->Upsert("w", rest, {}).ok());
  ASSERT_TRUE(db_->BuildIndex("w", "spann:quant=rabitq:bits=4").ok());
  SearchParams p;
  p.tenant = "thin";
  auto search = [&](const std::vector<float>& q) {
    auto hits = db_->Search("w", q, p);
    EXPECT_TRUE(hits.ok()) << hits.status();
    return hits.ok() && !(*hits)[0].empty() ? std::get<uint64_t>((*hits)[0][0].key) : kRows;
  };
  auto tenant_ram = [&] { return db_->DescribeCollection("w")->tenant_ram_bytes; };
  const uint64_t unsearched = tenant_ram();
  EXPECT_EQ(search(thin[5].vector), 35u);
  const uint64_t listed = tenant_ram();
  // 3 bytes an id (TenantTree::LeafMembers: this collection's ids span under 2^24).
  constexpr size_t kListed = 3;
  EXPECT_GE(listed - unsearched, thin.size() * kListed);  // and its search statistics
  EXPECT_EQ(search(thin[9].vector), 63u);
  EXPECT_EQ(tenant_ram(), listed);  // made by the first search, not again
  std::vector<float> v = thin[7].vector;
  v[0] += 0.01f;
  ASSERT_TRUE(db_->Upsert("w", std::vector{R(9000, v)}, as).ok());
  const uint64_t changed = tenant_ram();
  EXPECT_GE(listed - changed, thin.size() * kListed * 9 / 10);  // dropped
  EXPECT_EQ(search(v), 9000u);                                  // the new id, from the buffer
  EXPECT_GE(tenant_ram() - changed, thin.size() * kListed);
}

void TenantsTest::SsdIndexCase(const std::string& spec) {
  ASSERT_TRUE(db_->CreateTenant("c", {"a", {}}).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"b", {}}).ok());
  std::vector<Record> a, b;
  for (uint64_t i = 0; i < 4500; ++i) {
    const float x = static_cast<float>(i % 100), y = static_cast<float>(i / 100);
    (i % 3 == 0 ? a : b).push_back(R(i, {x, y}));
  }
  ASSERT_TRUE(db_->Upsert("c", a, As("a")).ok());
  ASSERT_TRUE(db_->Upsert("c", b, As("b")).ok());
  ASSERT_TRUE(db_->BuildIndex("c", spec).ok()) << spec;
  ASSERT_TRUE(db_->Upsert("c", std::vector{R(5000, {50.2f, 10})}, As("a")).ok());
  for (uint64_t k : SearchKeys("a", 50, 10, 20)) EXPECT_EQ(k % 3 == 0 || k == 5000, true) << k;
  EXPECT_EQ(SearchKeys("a", 50.2f, 10, 1)[0], 5000u);
  for (uint64_t k : SearchKeys("b", 50, 10, 20)) EXPECT_NE(k % 3, 0u) << k;
  // a (1501 vectors) is answered exactly (the quantized tier from its vector file, the other
  // from the records): its 10 nearest by brute force, in order.
  std::vector<std::pair<float, uint64_t>> exact;
  for (const Record& r : a) {
    const float dx = r.vector[0] - 37.31f, dy = r.vector[1] - 20.17f;
    exact.emplace_back(dx * dx + dy * dy, std::get<uint64_t>(r.key));
  }
  std::sort(exact.begin(), exact.end());
  std::vector<uint64_t> want;
  for (size_t i = 0; i < 10; ++i) want.push_back(exact[i].second);
  EXPECT_EQ(SearchKeys("a", 37.31f, 20.17f, 10), want) << spec;
  // b (3000 vectors) is searched through its sub-tree of the index, not exactly: its own
  // vectors are found (distinct grid points; 45 rows of 100).
  int found = 0;
  for (uint64_t i = 1; i < 4500; i += 45) {
    if (i % 3 == 0) continue;
    const auto keys = SearchKeys("b", static_cast<float>(i % 100), static_cast<float>(i / 100), 1);
    found += !keys.empty() && keys[0] == i;
  }
  EXPECT_GE(found, 60);  // of 67
  ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
  EXPECT_EQ(SearchKeys("a", 50.2f, 10, 1)[0], 5000u);
  Reopen();
  EXPECT_EQ(SearchKeys("a", 50.2f, 10, 1)[0], 5000u);
  VerifyReport report;
  EXPECT_TRUE(db_->Verify("c", &report).ok());
}

// Two tenants too large for the exact path, searched through their sub-trees of the index while
// postings split and merge (small posting cap) under upserts, deletes, grants and revokes:
// never a hit the tenant may not see; most of its vectors found by a search for themselves.
TEST_F(TenantsTest, LargeTenantsStayIsolatedThroughSplitsAndMerges) {
  ASSERT_TRUE(db_->CreateTenant("c", {"a", {}}).ok());
  ASSERT_TRUE(db_->CreateTenant("c", {"b", {}}).ok());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0, 100);
  std::map<uint64_t, std::vector<float>> vec;
  std::map<uint64_t, std::set<std::string>> sees;  // key -> tenants
  uint64_t next = 0;
  auto add = [&](const std::string& t, size_t n) {
    std::vector<Record> batch;
    for (size_t i = 0; i < n; ++i, ++next) {
      batch.push_back(R(next, {u(rng), u(rng)}));
      vec[next] = batch.back().vector;
      sees[next] = {t};
    }
    ASSERT_TRUE(db_->Upsert("c", batch, As(t)).ok());
  };
  add("a", 3000);
  add("b", 3000);
  ASSERT_TRUE(
      db_->BuildIndex("c", "spann:centroid_ratio=0.02,replicas=2,posting_cap=48,seed=1").ok());
  size_t found = 0, tried = 0;
  for (int round = 0; round < 6; ++round) {
    add(round % 2 ? "a" : "b", 400);
    std::vector<Key> gone, give, take;
    for (int i = 0; i < 150; ++i) {
      auto it = vec.begin();
      std::advance(it, rng() % vec.size());
      const uint64_t k = it->first;
      const int what = i % 3;
      if (what == 0 && std::find(gone.begin(), gone.end(), Key{k}) == gone.end()) {
        gone.push_back(k);
      } else if (what == 1 && sees[k].contains("b") && !sees[k].contains("a")) {
        give.push_back(k);
      }
    }
    for (const Key& k : give) {
      if (std::find(gone.begin(), gone.end(), k) == gone.end())
        sees[std::get<uint64_t>(k)].insert("a");
    }
    ASSERT_TRUE(db_->Grant("c", "a", give, {}).ok());
    for (size_t i = 0; i < give.size(); i += 3) take.push_back(give[i]);
    ASSERT_TRUE(db_->Revoke("c", "a", take, {}).ok());
    for (const Key& k : take) sees[std::get<uint64_t>(k)].erase("a");
    ASSERT_TRUE(db_->Delete("c", gone, {}).ok());
    for (const Key& k : gone) {
      vec.erase(std::get<uint64_t>(k));
      sees.erase(std::get<uint64_t>(k));
    }
    ASSERT_TRUE(db_->FlushIndexUpdates("c").ok());
    for (const std::string t : {"a", "b"}) {
      for (int qi = 0; qi < 20; ++qi) {
        for (uint64_t k : SearchKeys(t, u(rng), u(rng), 10)) {
          ASSERT_TRUE(sees.contains(k) && sees[k].contains(t)) << "tenant " << t << " key " << k;
        }
      }
      for (int qi = 0; qi < 20; ++qi) {
        auto it = vec.begin();
        std::advance(it, rng() % vec.size());
        if (!sees[it->first].contains(t)) continue;
        ++tried;
        const auto hit = SearchKeys(t, it->second[0], it->second[1], 1);
        found += !hit.empty() && hit[0] == it->first;
      }
    }
  }
  const CollectionInfo info = *db_->DescribeCollection("c");
  std::cout << "self-search found " << found << " of " << tried << "; splits "
            << info.posting_splits << ", merges " << info.posting_merges << "\n";
  EXPECT_GE(found * 10, tried * 8);
  VerifyReport report;
  const absl::Status v = db_->Verify("c", &report);
  EXPECT_TRUE(v.ok()) << v;
}

}  // namespace
}  // namespace shoal
