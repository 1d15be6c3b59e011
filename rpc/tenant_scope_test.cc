#include "rpc/tenant_scope.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

const Principal kAdmin{.name = "ops", .role = Role::kAdmin};
const Principal kWriter{.name = "loader", .role = Role::kReadWrite};
const Principal kReader{.name = "viewer", .role = Role::kReadOnly};
const Principal kAcme{.name = "acme-app", .role = Role::kReadWrite, .tenant = "acme"};
const Principal kAcmeReader{.name = "acme-ro", .role = Role::kReadOnly, .tenant = "acme"};

TEST(TenantScopeTest, BoundKeyIsPinnedToItsTenant) {
  EXPECT_EQ(ScopeTenant(kAcme, "", "tenant").value_or("?"), "acme");
  EXPECT_EQ(ScopeTenant(kAcme, "acme", "tenant").value_or("?"), "acme");
  EXPECT_EQ(ScopeTenant(kAcmeReader, "", "tenant").value_or("?"), "acme");
  EXPECT_EQ(TargetTenant(kAcme, "", "tenant").value_or("?"), "acme");
  EXPECT_EQ(TargetTenant(kAcme, "acme", "tenant").value_or("?"), "acme");
}

TEST(TenantScopeTest, BoundKeyNamingAnotherTenantIsDeniedNamingTheField) {
  absl::StatusOr<std::string> scoped = ScopeTenant(kAcme, "beta", "searches[1].tenant");
  ASSERT_TRUE(absl::IsPermissionDenied(scoped.status())) << scoped.status();
  EXPECT_EQ(scoped.status().message(),
            "searches[1].tenant: key \"acme-app\" is bound to tenant \"acme\" and may not name "
            "tenant \"beta\"");
  EXPECT_TRUE(absl::IsPermissionDenied(TargetTenant(kAcme, "beta", "tenant").status()));
  // Case matters: "Acme" is another tenant.
  EXPECT_TRUE(absl::IsPermissionDenied(ScopeTenant(kAcme, "Acme", "tenant").status()));
}

TEST(TenantScopeTest, OnlyAdminKeysMayNameATenantWhenNotBound) {
  EXPECT_EQ(ScopeTenant(kAdmin, "beta", "tenant").value_or("?"), "beta");
  EXPECT_EQ(ScopeTenant(kAdmin, "", "tenant").value_or("?"), "");
  EXPECT_EQ(ScopeTenant(kWriter, "", "tenant").value_or("?"), "");
  EXPECT_EQ(ScopeTenant(kReader, "", "tenant").value_or("?"), "");
  absl::Status denied = ScopeTenant(kWriter, "beta", "tenant").status();
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_NE(denied.message().find("tenant: key \"loader\" is read-write"), std::string::npos)
      << denied;
  EXPECT_TRUE(absl::IsPermissionDenied(ScopeTenant(kReader, "beta", "tenant").status()));
}

TEST(TenantScopeTest, TargetTenantNeedsANameFromUnboundKeys) {
  EXPECT_EQ(TargetTenant(kAdmin, "beta", "tenant").value_or("?"), "beta");
  EXPECT_EQ(TargetTenant(kReader, "beta", "tenant").value_or("?"), "beta");
  absl::Status missing = TargetTenant(kAdmin, "", "tenant").status();
  EXPECT_TRUE(absl::IsInvalidArgument(missing)) << missing;
  EXPECT_EQ(missing.message(), "tenant: required");
}

TEST(TenantScopeTest, WholeCollectionRpcsAreDeniedToBoundKeysOnly) {
  absl::Status denied =
      CheckTenantAccess(kAcme, TenantAccess::kWholeCollection, "CollectionService/DropCollection");
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_NE(denied.message().find("CollectionService/DropCollection"), std::string::npos);
  EXPECT_TRUE(CheckTenantAccess(kAcme, TenantAccess::kScoped, "x").ok());
  EXPECT_TRUE(CheckTenantAccess(kAcme, TenantAccess::kAnyKey, "x").ok());
  EXPECT_TRUE(CheckTenantAccess(kWriter, TenantAccess::kWholeCollection, "x").ok());
  EXPECT_TRUE(CheckTenantAccess(kAdmin, TenantAccess::kWholeCollection, "x").ok());
}

}  // namespace
}  // namespace shoal::rpc
