#include "rpc/api_keys.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

constexpr char kKeys[] = R"(# role key name
admin       admin-key-0123456789  ops
read-write  write-key-0123456789
read-only	read-key-01234567890  dashboards
)";

TEST(ApiKeysTest, AuthenticatesEachRoleAndNamesTheKey) {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(kKeys);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 3u);
  absl::StatusOr<Principal> admin = keys->Authenticate("admin-key-0123456789");
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(admin->role, Role::kAdmin);
  EXPECT_EQ(admin->name, "ops");
  absl::StatusOr<Principal> writer = keys->Authenticate("write-key-0123456789");
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(writer->role, Role::kReadWrite);
  EXPECT_EQ(writer->name, "key3");  // default name: the line number
  absl::StatusOr<Principal> reader = keys->Authenticate("read-key-01234567890");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->role, Role::kReadOnly);
}

TEST(ApiKeysTest, WrongMissingOrPrefixKeysAreUnauthenticated) {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(kKeys);
  ASSERT_TRUE(keys.ok());
  EXPECT_TRUE(absl::IsUnauthenticated(keys->Authenticate("").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(keys->Authenticate("admin-key-012345678").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(keys->Authenticate("admin-key-01234567890").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(keys->Authenticate("ADMIN-KEY-0123456789").status()));
}

TEST(ApiKeysTest, BadFilesNameTheLine) {
  absl::Status status = ApiKeys::Parse("admin short\n").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("line 1"), std::string::npos) << status;
  status = ApiKeys::Parse("\nroot admin-key-0123456789\n").status();
  EXPECT_NE(status.message().find("line 2: unknown role"), std::string::npos) << status;
  status =
      ApiKeys::Parse("admin admin-key-0123456789 a\nread-only admin-key-0123456789 b\n").status();
  EXPECT_NE(status.message().find("duplicate key"), std::string::npos) << status;
  EXPECT_TRUE(absl::IsInvalidArgument(ApiKeys::Parse("# nothing\n").status()));
}

TEST(ApiKeysTest, TenantBindsAKeyWithOrWithoutAName) {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(
      "read-write acme-key-0123456789 acme-app tenant=acme\n"
      "read-only  beta-key-0123456789 tenant=beta_2\n"
      "admin      admin-key-0123456789 ops\n");
  ASSERT_TRUE(keys.ok()) << keys.status();
  absl::StatusOr<Principal> acme = keys->Authenticate("acme-key-0123456789");
  ASSERT_TRUE(acme.ok());
  EXPECT_EQ(acme->name, "acme-app");
  EXPECT_EQ(acme->role, Role::kReadWrite);
  EXPECT_EQ(acme->tenant, "acme");
  absl::StatusOr<Principal> beta = keys->Authenticate("beta-key-0123456789");
  ASSERT_TRUE(beta.ok());
  EXPECT_EQ(beta->name, "key2");
  EXPECT_EQ(beta->tenant, "beta_2");
  absl::StatusOr<Principal> admin = keys->Authenticate("admin-key-0123456789");
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(admin->tenant, "");
}

TEST(ApiKeysTest, BadTenantBindingsNameTheLineAndNeverTheKey) {
  absl::Status status = ApiKeys::Parse("admin admin-key-0123456789 ops tenant=acme\n").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("line 1: tenant: an admin key cannot be bound"),
            std::string::npos)
      << status;
  status = ApiKeys::Parse("read-only secret-key-0123456789 x tenant=9bad\n").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("line 1: tenant must match"), std::string::npos) << status;
  EXPECT_EQ(status.message().find("secret-key"), std::string::npos) << status;
  status = ApiKeys::Parse("read-only secret-key-0123456789 x tenant=\n").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  status = ApiKeys::Parse("read-only secret-key-0123456789 x y tenant=a\n").status();
  EXPECT_NE(status.message().find("ROLE KEY [NAME] [tenant=T]"), std::string::npos) << status;
  EXPECT_EQ(status.message().find("secret-key"), std::string::npos) << status;
}

TEST(ApiKeysTest, PresentedKeyPrefersBearer) {
  EXPECT_EQ(PresentedKey("Bearer abc", "xyz"), "abc");
  EXPECT_EQ(PresentedKey("bearer abc", ""), "abc");
  EXPECT_EQ(PresentedKey("", "xyz"), "xyz");
  EXPECT_EQ(PresentedKey("Basic abc", ""), "");
}

}  // namespace
}  // namespace shoal::rpc
