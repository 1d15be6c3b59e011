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

TEST(ApiKeysTest, PresentedKeyPrefersBearer) {
  EXPECT_EQ(PresentedKey("Bearer abc", "xyz"), "abc");
  EXPECT_EQ(PresentedKey("bearer abc", ""), "abc");
  EXPECT_EQ(PresentedKey("", "xyz"), "xyz");
  EXPECT_EQ(PresentedKey("Basic abc", ""), "");
}

}  // namespace
}  // namespace shoal::rpc
