#include "tenants/access_table.h"

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

}  // namespace
}  // namespace shoal::tenants
