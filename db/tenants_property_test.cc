// Randomized isolation test of tenants against an in-test model: create and drop tenants,
// upsert with an owner, grant, revoke, delete (by key, with and without a tenant, by tenant),
// reopen, BuildIndex and FlushIndexUpdates with a small posting cap (so postings split and
// merge), grant then revoke (the answers before come back). After every step: no Search, Get or
// Count answers anything the tenant may not see, counts and ListKeyTenants agree with the model,
// and a visible vector is found by a search for itself. Ends with DB::Verify. SHOAL_TENANT_OPS sets
// the number of operations (default 20000; the long run is SHOAL_TENANT_OPS=1000000);
// SHOAL_TEST_SEED replays a run.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/test_seed.h"
#include "shoal/db.h"

namespace shoal {
namespace {

constexpr uint32_t kDim = 4;
constexpr uint64_t kKeys = 600;
constexpr int kTenantNames = 10;

struct ModelRecord {
  std::vector<float> vector;
  std::string owner;  // "" = none
  std::set<std::string> grants;
};

class Model {
 public:
  std::set<std::string> tenants;
  std::map<uint64_t, ModelRecord> records;

  bool Sees(const std::string& t, uint64_t key) const {
    auto it = records.find(key);
    if (it == records.end()) return false;
    return it->second.owner == t || it->second.grants.contains(t);
  }
  uint64_t Count(const std::string& t, bool owned_only) const {
    uint64_t n = 0;
    for (const auto& [k, r] : records) n += owned_only ? r.owner == t : Sees(t, k);
    return n;
  }
};

class TenantsPropertyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tenants_property_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Reopen();
    ASSERT_TRUE(db_->CreateCollection({"c", kDim, Metric::kL2}).ok());
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

  std::string TenantName() { return absl::StrCat("t", Uniform(kTenantNames)); }
  // A tenant or, sometimes, "" (untenanted).
  std::string Writer() { return Uniform(5) == 0 ? "" : TenantName(); }
  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  std::vector<uint64_t> SomeKeys(size_t most) {
    std::vector<uint64_t> keys;
    const size_t n = 1 + Uniform(most);
    for (size_t i = 0; i < n; ++i) keys.push_back(Uniform(kKeys));
    return keys;
  }
  std::vector<float> RandomVector() {
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> v(kDim);
    for (float& x : v) x = u(rng_);
    return v;
  }
  static std::vector<Key> AsKeys(const std::vector<uint64_t>& keys) {
    return std::vector<Key>(keys.begin(), keys.end());
  }
  WriteOptions As(const std::string& t) {
    WriteOptions o;
    o.tenant = t;
    return o;
  }

  void Step();
  void Upsert();
  void SetAccess(bool grant);
  void Delete();
  void DropOrDeleteByTenant(bool drop);
  void GrantThenRevokeRestores();
  void Check();

  std::mt19937_64 rng_;
  std::string dir_;
  std::unique_ptr<DB> db_;
  Model m_;
  std::string where_;
};

void TenantsPropertyTest::Upsert() {
  std::vector<uint64_t> keys = SomeKeys(4);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const std::string w = Writer();
  std::vector<Record> records;
  for (uint64_t k : keys) records.push_back(Record{k, RandomVector(), {}, {}});
  const absl::Status s = db_->Upsert("c", records, As(w));
  if (!w.empty() && !m_.tenants.contains(w)) {
    ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << where_ << s;
    return;
  }
  bool denied = false;
  for (uint64_t k : keys) {
    auto it = m_.records.find(k);
    if (!w.empty() && it != m_.records.end() && it->second.owner != w) denied = true;
  }
  if (denied) {
    ASSERT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << where_ << s;
    return;
  }
  ASSERT_TRUE(s.ok()) << where_ << s;
  for (const Record& r : records) {
    const uint64_t k = std::get<uint64_t>(r.key);
    ModelRecord& m = m_.records[k];  // a rewrite keeps grants; untenanted, the owner too
    m.vector = r.vector;
    if (!w.empty()) m.owner = w;
  }
}

void TenantsPropertyTest::SetAccess(bool grant) {
  const std::vector<uint64_t> keys = SomeKeys(3);
  const std::string t = TenantName();
  const std::vector<Key> k = AsKeys(keys);
  const absl::Status s = grant ? db_->Grant("c", t, k, {}) : db_->Revoke("c", t, k, {});
  if (!m_.tenants.contains(t)) {
    ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << where_ << s;
    return;
  }
  for (uint64_t key : keys) {
    auto it = m_.records.find(key);
    if (it == m_.records.end()) {
      ASSERT_EQ(s.code(), absl::StatusCode::kNotFound) << where_ << s;
      return;
    }
    if (!grant && it->second.owner == t) {
      ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << where_ << s;
      return;
    }
  }
  ASSERT_TRUE(s.ok()) << where_ << s;
  for (uint64_t key : keys) {
    ModelRecord& r = m_.records[key];
    if (r.owner == t) continue;
    if (grant) {
      r.grants.insert(t);
    } else {
      r.grants.erase(t);
    }
  }
}

void TenantsPropertyTest::Delete() {
  std::vector<uint64_t> keys = SomeKeys(3);
  const std::string t = Writer();
  auto n = db_->Delete("c", AsKeys(keys), As(t));
  if (!t.empty() && !m_.tenants.contains(t)) {
    ASSERT_EQ(n.status().code(), absl::StatusCode::kNotFound) << where_;
    return;
  }
  std::set<uint64_t> gone;
  for (uint64_t k : keys) {
    if (!m_.records.contains(k)) continue;
    if (!t.empty() && !m_.Sees(t, k)) continue;
    if (!t.empty() && m_.records[k].owner != t) {
      ASSERT_EQ(n.status().code(), absl::StatusCode::kPermissionDenied) << where_;
      return;
    }
    gone.insert(k);
  }
  ASSERT_TRUE(n.ok()) << where_ << n.status();
  ASSERT_EQ(*n, gone.size()) << where_;
  for (uint64_t k : gone) m_.records.erase(k);
}

void TenantsPropertyTest::DropOrDeleteByTenant(bool drop) {
  const std::string t = TenantName();
  auto n = drop ? db_->DropTenant("c", t, {}) : db_->DeleteByTenant("c", t, {});
  if (!m_.tenants.contains(t)) {
    ASSERT_EQ(n.status().code(), absl::StatusCode::kNotFound) << where_;
    return;
  }
  ASSERT_TRUE(n.ok()) << where_ << n.status();
  ASSERT_EQ(*n, m_.Count(t, /*owned_only=*/true)) << where_;
  std::erase_if(m_.records, [&](const auto& kv) { return kv.second.owner == t; });
  if (drop) {
    m_.tenants.erase(t);
    for (auto& [k, r] : m_.records) r.grants.erase(t);
  }
}

// Granting keys a tenant does not see and revoking them again gives the same search answers
// as before, and the same tenants per key.
void TenantsPropertyTest::GrantThenRevokeRestores() {
  const std::string t = TenantName();
  if (!m_.tenants.contains(t)) return;
  std::vector<uint64_t> keys;
  for (uint64_t k : SomeKeys(6)) {
    if (m_.records.contains(k) && !m_.Sees(t, k)) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  if (keys.empty()) return;
  SearchParams p;
  p.k = 10;
  p.tenant = t;
  const std::vector<float> q = RandomVector();
  auto answer = [&]() {
    auto hits = db_->Search("c", q, p);
    EXPECT_TRUE(hits.ok()) << where_ << hits.status();
    std::vector<std::pair<uint64_t, float>> out;
    if (hits.ok()) {
      for (const Hit& h : (*hits)[0]) out.emplace_back(std::get<uint64_t>(h.key), h.distance);
    }
    return out;
  };
  const auto before = answer();
  std::vector<std::vector<std::string>> tenants_before;
  for (uint64_t k : keys) tenants_before.push_back(*db_->ListKeyTenants("c", k));
  ASSERT_TRUE(db_->Grant("c", t, AsKeys(keys), {}).ok()) << where_;
  ASSERT_TRUE(db_->Revoke("c", t, AsKeys(keys), {}).ok()) << where_;
  ASSERT_EQ(answer(), before) << where_ << " tenant " << t;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(*db_->ListKeyTenants("c", keys[i]), tenants_before[i])
        << where_ << " key " << keys[i];
  }
}

void TenantsPropertyTest::Check() {
  const std::string t = TenantName();
  const bool exists = m_.tenants.contains(t);
  // Search: only visible keys, and as many as there are (small tenants are searched exactly).
  SearchParams p;
  p.k = 10;
  p.tenant = t;
  const std::vector<float> q = RandomVector();
  auto hits = db_->Search("c", q, p);
  if (!exists) {
    ASSERT_EQ(hits.status().code(), absl::StatusCode::kNotFound) << where_;
    return;
  }
  ASSERT_TRUE(hits.ok()) << where_ << hits.status();
  const uint64_t visible = m_.Count(t, false);
  ASSERT_EQ((*hits)[0].size(), std::min<uint64_t>(10, visible)) << where_ << " tenant " << t;
  for (const Hit& h : (*hits)[0]) {
    ASSERT_TRUE(m_.Sees(t, std::get<uint64_t>(h.key)))
        << where_ << " tenant " << t << " got key " << std::get<uint64_t>(h.key);
  }
  ASSERT_EQ(*db_->CountByTenant("c", t, false), visible) << where_;
  ASSERT_EQ(*db_->CountByTenant("c", t, true), m_.Count(t, true)) << where_;
  // Get: visibility per key.
  const std::vector<uint64_t> keys = SomeKeys(8);
  ReadOptions ro;
  ro.tenant = t;
  auto got = db_->Get("c", AsKeys(keys), ro);
  ASSERT_TRUE(got.ok()) << where_;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ((*got)[i].has_value(), m_.Sees(t, keys[i])) << where_ << " key " << keys[i];
    if ((*got)[i].has_value()) {
      ASSERT_EQ((*got)[i]->vector, m_.records[keys[i]].vector);
    }
  }
  // Reachability: a visible vector is the nearest hit of a search for itself.
  for (const auto& [k, r] : m_.records) {
    if (!m_.Sees(t, k) || Uniform(4) != 0) continue;
    p.k = 1;
    auto self = db_->Search("c", r.vector, p);
    ASSERT_TRUE(self.ok()) << where_;
    ASSERT_EQ((*self)[0].size(), 1u) << where_;
    ASSERT_EQ(std::get<uint64_t>((*self)[0][0].key), k) << where_ << " tenant " << t;
    break;
  }
  // The tenants of a key.
  const uint64_t key = Uniform(kKeys);
  auto list = db_->ListKeyTenants("c", key);
  auto it = m_.records.find(key);
  if (it == m_.records.end()) {
    ASSERT_EQ(list.status().code(), absl::StatusCode::kNotFound) << where_;
    return;
  }
  ASSERT_TRUE(list.ok()) << where_;
  std::vector<std::string> want;
  if (!it->second.owner.empty()) want.push_back(it->second.owner);
  want.insert(want.end(), it->second.grants.begin(), it->second.grants.end());
  ASSERT_EQ(*list, want) << where_ << " key " << key;
}

void TenantsPropertyTest::Step() {
  const uint64_t dice = Uniform(10000);
  if (dice < 300) {
    const std::string t = TenantName();
    const absl::Status s = db_->CreateTenant("c", {t, {}});
    ASSERT_EQ(s.code(),
              m_.tenants.contains(t) ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kOk)
        << where_ << s;
    m_.tenants.insert(t);
  } else if (dice < 360) {
    DropOrDeleteByTenant(/*drop=*/true);
  } else if (dice < 420) {
    DropOrDeleteByTenant(/*drop=*/false);
  } else if (dice < 4200) {
    Upsert();
  } else if (dice < 5800) {
    SetAccess(/*grant=*/true);
  } else if (dice < 6800) {
    SetAccess(/*grant=*/false);
  } else if (dice < 7900) {
    Delete();
  } else if (dice < 7905) {
    Reopen();
  } else if (dice < 7908) {
    ASSERT_TRUE(
        db_->BuildIndex("c", "spann:centroid_ratio=0.05,replicas=2,posting_cap=24,seed=1").ok())
        << where_;
  } else if (dice < 7930) {
    ASSERT_TRUE(db_->FlushIndexUpdates("c").ok()) << where_;
  } else if (dice < 8100) {
    GrantThenRevokeRestores();
  }
  Check();
}

TEST_F(TenantsPropertyTest, RandomOperationsNeverLeakAcrossTenants) {
  rng_.seed(base::TestSeed());
  const char* env = std::getenv("SHOAL_TENANT_OPS");
  const uint64_t ops = env != nullptr ? std::stoull(env) : 20000;
  std::cout << ops << " operations\n";
  for (uint64_t i = 0; i < ops; ++i) {
    where_ = absl::StrCat("op ", i, ":");
    Step();
    if (HasFatalFailure()) return;
    if (i % 50000 == 49999) std::cout << i + 1 << " operations done" << std::endl;
    if (i % 2000 == 1999) {  // the structures too: access table, rows, tenant trees
      VerifyReport report;
      const absl::Status v = db_->Verify("c", &report);
      ASSERT_TRUE(v.ok()) << where_ << v;
    }
  }
  VerifyReport report;
  const absl::Status v = db_->Verify("c", &report);
  EXPECT_TRUE(v.ok()) << v;
}

}  // namespace
}  // namespace shoal
