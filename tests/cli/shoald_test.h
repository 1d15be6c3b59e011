// ShoaldTest: a gtest fixture that starts a real shoald on port 0 over a fresh data directory
// (data_dir_) and gives the test a scratch directory (work_dir_); both are removed afterwards.
#ifndef SHOAL_TESTS_CLI_SHOALD_TEST_H_
#define SHOAL_TESTS_CLI_SHOALD_TEST_H_

#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/e2e/shoald_process.h"

namespace shoal {

class ShoaldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = e2e::MakeTempDir();
    work_dir_ = e2e::MakeTempDir();
    ASSERT_FALSE(data_dir_.empty() || work_dir_.empty());
    shoald_ = std::make_unique<e2e::ShoaldProcess>();
    absl::Status started = shoald_->Start(data_dir_);
    ASSERT_TRUE(started.ok()) << started;
  }
  void TearDown() override {
    shoald_.reset();
    std::filesystem::remove_all(data_dir_);
    std::filesystem::remove_all(work_dir_);
  }

  std::string data_dir_;
  std::string work_dir_;
  std::unique_ptr<e2e::ShoaldProcess> shoald_;
};

}  // namespace shoal

#endif  // SHOAL_TESTS_CLI_SHOALD_TEST_H_
