#include "storage/records/rocksdb_info_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rocksdb/env.h"
#include "storage/io/fault_injection.h"
#include "storage/records/record_store.h"

namespace shoal::storage {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

class InfoLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "info_log_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  FaultInjectingFileSystem fs_;
};

TEST_F(InfoLogTest, DropsLinesItCannotWriteAndSaysHowManyOnceItCan) {
  std::shared_ptr<rocksdb::Logger> log = NewInfoLog(fs_.rocksdb_env(), dir_);
  rocksdb::Log(log, "before %d", 1);
  fs_.Fail(FaultOp::kWrite, "/LOG", ENOSPC, /*one_shot=*/false);
  // RocksDB's own logger aborted the process on the second line after a failed write.
  for (int i = 0; i < 3; ++i) rocksdb::Log(log, "lost %d", i);
  fs_.Clear();
  rocksdb::Log(log, "after %d", 2);
  ASSERT_TRUE(log->Close().ok());

  const std::string text = ReadFile(dir_ + "/LOG");
  EXPECT_THAT(text, HasSubstr("before 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("lost")));
  EXPECT_THAT(text, HasSubstr("3 info log lines dropped"));
  EXPECT_THAT(text, HasSubstr("No space left on device"));
  EXPECT_THAT(text, HasSubstr("after 2\n"));
  EXPECT_LT(text.find("before 1"), text.find("dropped"));
  EXPECT_LT(text.find("dropped"), text.find("after 2"));
}

TEST_F(InfoLogTest, KeepsTheLogOfAnEarlierRunAsLogOld) {
  { std::ofstream(dir_ + "/LOG") << "earlier run\n"; }
  std::shared_ptr<rocksdb::Logger> log = NewInfoLog(fs_.rocksdb_env(), dir_);
  rocksdb::Log(log, "this run");
  ASSERT_TRUE(log->Close().ok());
  int old_logs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("LOG.old.", 0) == 0) {
      ++old_logs;
      EXPECT_EQ(ReadFile(entry.path().string()), "earlier run\n");
    }
  }
  EXPECT_EQ(old_logs, 1);
  EXPECT_THAT(ReadFile(dir_ + "/LOG"), HasSubstr("this run\n"));
}

TEST_F(InfoLogTest, LongLinesAreWrittenWhole) {
  std::shared_ptr<rocksdb::Logger> log = NewInfoLog(fs_.rocksdb_env(), dir_);
  const std::string long_text(5000, 'x');
  rocksdb::Log(log, "%s!", long_text.c_str());
  ASSERT_TRUE(log->Close().ok());
  EXPECT_THAT(ReadFile(dir_ + "/LOG"), HasSubstr(long_text + "!\n"));
}

// A RecordStore whose info log cannot be written at all opens, writes, flushes and closes.
TEST_F(InfoLogTest, RecordStoreRunsWithAnUnwritableInfoLog) {
  fs_.Fail(FaultOp::kWrite, "/LOG", ENOSPC, /*one_shot=*/false);
  absl::StatusOr<std::unique_ptr<RecordStore>> store =
      RecordStore::Open(dir_ + "/rocksdb", {.env = fs_.rocksdb_env()});
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<StoredCollection> c = (*store)->CreateCollection({.name = "c", .dimension = 2});
  ASSERT_TRUE(c.ok()) << c.status();
  for (uint64_t i = 0; i < 100; ++i) {
    RecordStore::Batch batch = (*store)->NewBatch();
    batch.PutRecord(c->id, i, Record{.key = i, .vector = {1.0f, 2.0f}}, /*new_key=*/true);
    ASSERT_TRUE((*store)->Commit(batch, /*sync=*/true).ok());
  }
  ASSERT_TRUE((*store)->Compact(c->id).ok());
  EXPECT_GT(fs_.injected(), 0u);
  store->reset();
  fs_.Clear();
  store = RecordStore::Open(dir_ + "/rocksdb", {.env = fs_.rocksdb_env()});
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::optional<Record>> record = (*store)->GetRecord(c->id, 99);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->has_value());
}

}  // namespace
}  // namespace shoal::storage
