#include "tenants/access_table.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "base/test_seed.h"
#include "gtest/gtest.h"

namespace shoal::tenants {
namespace {

TEST(AccessTableTest, OwnerAndGranteesSeeAnIdOthersDoNot) {
  AccessTable a;
  a.AddTenant(1);
  a.AddTenant(2);
  a.AddTenant(3);
  a.SetOwner(7, 1, 100);
  EXPECT_TRUE(a.Visible(1, 7));
  EXPECT_FALSE(a.Visible(2, 7));
  EXPECT_TRUE(a.Grant(7, 2));
  EXPECT_FALSE(a.Grant(7, 2));  // twice
  EXPECT_FALSE(a.Grant(7, 1));  // the owner
  EXPECT_TRUE(a.Visible(2, 7));
  EXPECT_FALSE(a.Visible(3, 7));
  EXPECT_FALSE(a.Visible(kNoTenant, 7));
  EXPECT_EQ(a.OwnedCount(1), 1u);
  EXPECT_EQ(a.VisibleCount(2), 1u);
  EXPECT_EQ(a.OwnedBytes(1), 100u);
  ASSERT_EQ(a.GrantsOf(7).size(), 1u);
  EXPECT_EQ(a.GrantsOf(7)[0], 2u);
}

TEST(AccessTableTest, RemoveHidesTheIdFromEveryTenant) {
  AccessTable a;
  a.AddTenant(1);
  a.AddTenant(2);
  a.SetOwner(7, 1, 10);
  a.Grant(7, 2);
  a.Remove(7);
  EXPECT_FALSE(a.Visible(1, 7));
  EXPECT_FALSE(a.Visible(2, 7));
  EXPECT_EQ(a.OwnedBytes(1), 0u);
  EXPECT_EQ(a.VisibleCount(2), 0u);
  EXPECT_EQ(a.size(), 0u);
}

TEST(AccessTableTest, RevokeThenGrantRestores) {
  AccessTable a;
  a.AddTenant(1);
  a.AddTenant(2);
  a.SetOwner(7, 1, 10);
  EXPECT_FALSE(a.Revoke(7, 2));
  EXPECT_FALSE(a.Revoke(7, 1));  // the owner is not a grantee
  a.Grant(7, 2);
  EXPECT_TRUE(a.Revoke(7, 2));
  EXPECT_FALSE(a.Visible(2, 7));
  EXPECT_TRUE(a.Visible(1, 7));
}

TEST(AccessTableTest, RemoveTenantDropsItsGrantsAndOwnership) {
  AccessTable a;
  a.AddTenant(1);
  a.AddTenant(2);
  a.SetOwner(7, 1, 10);
  a.SetOwner(8, 2, 10);
  a.Grant(7, 2);
  a.Grant(8, 1);
  a.RemoveTenant(2);
  EXPECT_FALSE(a.HasTenant(2));
  EXPECT_TRUE(a.GrantsOf(7).empty());
  EXPECT_EQ(a.OwnerOf(8), kNoTenant);
  EXPECT_TRUE(a.Visible(1, 8));  // still granted to 1
}

TEST(AccessTableTest, SetBytesAdjustsTheOwnersTotal) {
  AccessTable a;
  a.AddTenant(1);
  a.SetOwner(7, 1, 0);
  a.SetBytes(7, 64);
  EXPECT_EQ(a.OwnedBytes(1), 64u);
  EXPECT_EQ(a.BytesOf(7), 64u);
}

// Random owners, grants, revokes, deletes and dropped tenants (a dropped tenant's handle goes
// to a new one) over ids that share pages: each id's owner, grantees (in grant order) and bytes,
// and each tenant's totals, match a model. `fillers` tenants with no ids are added first, so
// that the tenants changed get handles from fillers + 1 on.
void ExpectRandomChangesMatchAModel(TenantId fillers) {
  std::mt19937_64 rng(base::TestSeed());
  struct Model {
    TenantId owner = kNoTenant;
    uint64_t bytes = 0;
    std::vector<TenantId> grants;
  };
  std::map<uint64_t, Model> model;
  std::vector<TenantId> tenants;
  AccessTable a;
  for (TenantId t = 1; t <= fillers; ++t) a.AddTenant(1000000 + t);
  TenantId next = 1;
  for (; next <= 12; ++next) {
    a.AddTenant(next);
    tenants.push_back(next);
  }
  const auto any_id = [&] { return std::uniform_int_distribution<uint64_t>(0, 1500)(rng); };
  for (int step = 0; step < 20000; ++step) {
    if (tenants.empty()) break;
    const TenantId t = tenants[rng() % tenants.size()];
    const uint64_t id = any_id();
    Model& m = model[id];
    // The hints a grant gives before its check change nothing (past the last page and for an
    // unknown tenant too).
    a.Prefetch(id, t);
    a.PrefetchGrantees(id);
    a.Prefetch(id + 4096, 999999);
    a.PrefetchGrantees(id + 4096);
    switch (rng() % 8) {
      case 0: {  // a new owner (rewrite keeps the grants)
        const uint64_t bytes = rng() % 3 == 0 ? 0 : rng() % 5000;
        if (std::find(m.grants.begin(), m.grants.end(), t) != m.grants.end()) break;
        a.SetOwner(id, t, bytes);
        m.owner = t;
        m.bytes = bytes;
        break;
      }
      case 1:
      case 2:
      case 3: {
        const bool expect =
            m.owner != t && std::find(m.grants.begin(), m.grants.end(), t) == m.grants.end();
        ASSERT_EQ(a.Grant(id, t), expect);
        if (expect) m.grants.push_back(t);
        break;
      }
      case 4:
      case 5: {
        const auto at = std::find(m.grants.begin(), m.grants.end(), t);
        ASSERT_EQ(a.Revoke(id, t), at != m.grants.end());
        if (at != m.grants.end()) m.grants.erase(at);
        break;
      }
      case 6:
        a.Remove(id);
        m = Model{};
        break;
      default:
        if (rng() % 50 != 0) break;
        a.RemoveTenant(t);
        tenants.erase(std::find(tenants.begin(), tenants.end(), t));
        for (auto& [i, e] : model) {
          if (e.owner == t) e = Model{.grants = e.grants};
          e.grants.erase(std::remove(e.grants.begin(), e.grants.end(), t), e.grants.end());
        }
        a.AddTenant(next);  // takes the dropped tenant's handle: it must see none of its ids
        tenants.push_back(next++);
    }
  }
  size_t entries = 0;
  std::map<TenantId, uint64_t> owned_bytes;
  for (const auto& [id, m] : model) {
    ASSERT_EQ(a.OwnerOf(id), m.owner) << id;
    ASSERT_EQ(a.BytesOf(id), m.owner == kNoTenant ? 0 : m.bytes) << id;
    ASSERT_EQ(a.GrantsOf(id), m.grants) << id;
    for (TenantId t : tenants) {
      ASSERT_EQ(a.Visible(t, id),
                m.owner == t || std::find(m.grants.begin(), m.grants.end(), t) != m.grants.end());
    }
    entries += m.owner != kNoTenant || !m.grants.empty() ? 1 : 0;
    if (m.owner != kNoTenant) owned_bytes[m.owner] += m.bytes;
  }
  EXPECT_EQ(a.size(), entries);
  for (TenantId t : tenants) EXPECT_EQ(a.OwnedBytes(t), owned_bytes[t]) << t;
  size_t listed = 0;
  a.ForEachId([&](uint64_t id, TenantId owner, std::span<const TenantId> grants) {
    ++listed;
    EXPECT_EQ(owner, model[id].owner);
    EXPECT_EQ(std::vector<TenantId>(grants.begin(), grants.end()), model[id].grants);
  });
  EXPECT_EQ(listed, entries);
}

TEST(AccessTableTest, EntriesMatchAModelUnderRandomChanges) { ExpectRandomChangesMatchAModel(0); }

// The same with the changed tenants' handles around 2^16: pages holding 2-byte handles widen
// to 4 bytes in place when a handle of 65,536 or more first owns or is granted one of their
// ids, and every entry reads back the same before and after.
TEST(AccessTableTest, EntriesMatchAModelWhenHandlesOutgrowTwoBytes) {
  ExpectRandomChangesMatchAModel(65530);
}

// Over 65,535 grantees in one page: the page's offsets into its grantee list widen to 4 bytes
// in place; grants, revokes and deletes read back right on both sides of the switch.
TEST(AccessTableTest, APageOfOver65535GranteesWidensItsOffsets) {
  AccessTable a;
  constexpr TenantId kTenants = 300;
  for (TenantId t = 1; t <= kTenants; ++t) a.AddTenant(t);
  for (TenantId t = 1; t <= kTenants; ++t) {
    for (uint64_t id = 0; id < 256; ++id) ASSERT_TRUE(a.Grant(id, t));
  }
  for (uint64_t id = 0; id < 256; id += 17) {
    const std::vector<TenantId> g = a.GrantsOf(id);
    ASSERT_EQ(g.size(), kTenants);
    for (TenantId t = 1; t <= kTenants; ++t) ASSERT_EQ(g[t - 1], t);
  }
  for (uint64_t id = 0; id < 256; id += 2) a.Remove(id);  // 38,400 grantees left
  for (TenantId t = 2; t <= kTenants; t += 2) {
    for (uint64_t id = 1; id < 256; id += 2) ASSERT_TRUE(a.Revoke(id, t));
  }
  for (uint64_t id = 0; id < 256; ++id) {
    const std::vector<TenantId> g = a.GrantsOf(id);
    if (id % 2 == 0) {
      ASSERT_TRUE(g.empty()) << id;
      continue;
    }
    ASSERT_EQ(g.size(), kTenants / 2) << id;
    for (size_t k = 0; k < g.size(); ++k) ASSERT_EQ(g[k], 2 * k + 1) << id;
    EXPECT_TRUE(a.Visible(1, id));
    EXPECT_FALSE(a.Visible(2, id));
  }
  EXPECT_EQ(a.size(), 128u);
  EXPECT_EQ(a.VisibleCount(1), 128u);
  EXPECT_EQ(a.VisibleCount(2), 0u);
}

// A vector shared by grant costs its owner's handle, where its grantees start and 2 bytes per
// grantee while the collection has under 65,536 tenants (plus the tenants' own id sets, ~2
// bytes per pair): no per-id allocation, and no record size for an id no tenant owns.
TEST(AccessTableTest, AGrantedIdCostsTwoBytesAGranteeAndFourBytes) {
  AccessTable a;
  for (TenantId t = 1; t <= 100; ++t) a.AddTenant(t);
  constexpr uint64_t kIds = 1 << 16;
  for (uint64_t id = 0; id < kIds; ++id) {
    for (TenantId k = 0; k < 3; ++k) ASSERT_TRUE(a.Grant(id, 1 + (id * 7 + k * 31) % 100));
  }
  const double per_id = static_cast<double>(a.MemoryBytes()) / kIds;
  EXPECT_LE(per_id, 4 + 3 * 2.5 + 3 * 2 + 2) << per_id;  // 19.5; 4-byte handles and offsets:
                                                         // 27.8
}

}  // namespace
}  // namespace shoal::tenants
