#include "rpc/admin_service.h"

#include <gtest/gtest.h>

namespace shoal::rpc {
namespace {

TEST(ValidateSnapshotNameTest, AcceptsPlainNamesOnly) {
  for (const char* good : {"nightly", "snap-1", "snapshot-20261121-181500-42", "a.b_c", "_x"}) {
    EXPECT_TRUE(ValidateSnapshotName(good, "name").ok()) << good;
  }
  for (const char* bad :
       {"", "..", "../x", "a/b", "/etc", "x/..", "a..b", ".hidden", "-x", "a b", "a\\b", "a\nb"}) {
    absl::Status status = ValidateSnapshotName(bad, "name");
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_EQ(status.message().rfind("name: ", 0), 0u) << status;
  }
  EXPECT_FALSE(ValidateSnapshotName(std::string(129, 'a'), "name").ok());
}

}  // namespace
}  // namespace shoal::rpc
