#include "storage/io/fault_injection.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rocksdb/env.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"

namespace shoal::storage {
namespace {

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "fault_injection_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string ReadAll(const std::string& path) {
    auto f = FileSystem::Default()->Open(path, OpenMode::kExisting);
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return "<missing>";
    std::string out(*(*f)->Size(), '\0');
    auto n = (*f)->Read(0, {reinterpret_cast<uint8_t*>(out.data()), out.size()});
    EXPECT_TRUE(n.ok());
    return out;
  }

  std::string dir_;
};

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST_F(FaultInjectionTest, FailsMatchingOperationOnceThenRecovers) {
  FaultInjectingFileSystem fs;
  const std::string path = dir_ + "/a.dat";
  fs.Fail(FaultOp::kWrite, "a.dat", ENOSPC);
  auto f = fs.Open(path, OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  absl::Status s = (*f)->Write(0, Bytes("hello"));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("a.dat"), std::string::npos) << s;
  EXPECT_TRUE((*f)->Write(0, Bytes("hello")).ok());
  fs.Fail(FaultOp::kSync, "a.dat", EIO);
  EXPECT_EQ((*f)->Sync().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE((*f)->Sync().ok());
  EXPECT_EQ(fs.injected(), 2u);
  EXPECT_EQ(fs.Count(FaultOp::kWrite, "a.dat"), 2u);
  EXPECT_EQ(fs.Count(FaultOp::kSync, "a.dat"), 2u);
}

TEST_F(FaultInjectionTest, PersistentRuleHoldsUntilCleared) {
  FaultInjectingFileSystem fs;
  fs.Fail(FaultOp::kRename, "x", EIO, /*one_shot=*/false);
  ASSERT_TRUE(WriteFileSynced(fs, dir_ + "/x1", "1").ok());
  EXPECT_FALSE(fs.Rename(dir_ + "/x1", dir_ + "/y").ok());
  EXPECT_FALSE(fs.Rename(dir_ + "/x1", dir_ + "/y").ok());
  fs.Clear();
  EXPECT_TRUE(fs.Rename(dir_ + "/x1", dir_ + "/y").ok());
  EXPECT_EQ(ReadAll(dir_ + "/y"), "1");
}

TEST_F(FaultInjectionTest, TornWriteStoresOnlyAPrefix) {
  FaultInjectingFileSystem fs;
  fs.TearWrite("t.dat", 3);
  auto f = fs.Open(dir_ + "/t.dat", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->Write(0, Bytes("abcdef")).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ReadAll(dir_ + "/t.dat"), "abc");
}

TEST_F(FaultInjectionTest, PowerLossKeepsOnlySyncedContent) {
  FaultInjectingFileSystem fs;
  auto f = fs.Open(dir_ + "/p.dat", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Write(0, Bytes("synced")).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Write(0, Bytes("SYNCED and more")).ok());
  auto g = fs.Open(dir_ + "/never_synced.dat", OpenMode::kCreate);
  ASSERT_TRUE((*g)->Write(0, Bytes("gone")).ok());
  fs.PowerOff();
  EXPECT_FALSE((*f)->Write(0, Bytes("after power off")).ok());
  f->reset();
  g->reset();
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  EXPECT_EQ(ReadAll(dir_ + "/p.dat"), "synced");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/never_synced.dat"));
}

TEST_F(FaultInjectionTest, PostingWriterNamesTheFileAndWritesAgainOnceTheFaultClears) {
  FaultInjectingFileSystem fs;
  const std::string path = dir_ + "/postings.dat";
  auto w = PostingFileWriter::Create(path, &fs);
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> payload(100, 7), other(5000, 9);
  auto first = (*w)->Append(0, payload);
  ASSERT_TRUE(first.ok());
  fs.TearWrite("postings.dat", 10);
  auto e = (*w)->Append(1, payload);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("postings.dat"), std::string::npos) << e.status();
  // Not latched: the next append goes where the torn one went and overwrites it.
  auto second = (*w)->Append(2, other);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->first_page, first->first_page + first->num_pages);
  fs.Fail(FaultOp::kSync, "postings.dat", EIO);
  EXPECT_EQ((*w)->Sync().code(), absl::StatusCode::kInternal);
  ASSERT_TRUE((*w)->Sync().ok());
  w->reset();
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), (second->first_page + second->num_pages) * kPageSize);
  std::vector<uint8_t> got;
  const auto* pages = reinterpret_cast<const uint8_t*>(bytes.data());
  ASSERT_TRUE(DecodePosting({pages + second->first_page * kPageSize, second->num_pages * kPageSize},
                            *second, 2, path, &got)
                  .ok());
  EXPECT_EQ(got, other);
}

// Reads vector `id` of the file at `path` (NotFound when it was never written).
absl::StatusOr<std::vector<float>> ReadVector(const std::string& path, uint64_t id) {
  auto vf = VectorFile::Open(path, 8, IoBackend::kPread);
  if (!vf.ok()) return vf.status();
  std::vector<float> got;
  absl::Status s = (*vf)->ReadBatch({&id, 1}, [&](size_t, const float* x) {
    got.assign(x, x + 8);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return got;
}

TEST_F(FaultInjectionTest, VectorFileSyncFailureLeavesTheLastSyncedVectorsAfterAPowerLoss) {
  FaultInjectingFileSystem fs;
  const std::string path = dir_ + "/vectors.dat";
  std::vector<float> v(8, 1.5f), w(8, 2.5f);
  {
    auto vf = VectorFile::Create(path, 8, IoBackend::kPread, &fs);
    ASSERT_TRUE(vf.ok());
    ASSERT_TRUE((*vf)->Put(1, v.data()).ok());
    ASSERT_TRUE((*vf)->Sync().ok());
    ASSERT_TRUE((*vf)->Put(1, w.data()).ok());
    ASSERT_TRUE((*vf)->Put(500, w.data()).ok());
    fs.Fail(FaultOp::kSync, "vectors.dat", EIO);
    EXPECT_EQ((*vf)->Sync().code(), absl::StatusCode::kInternal);
    fs.PowerOff();
  }
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  auto got = ReadVector(path, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, v);
  EXPECT_EQ(ReadVector(path, 500).status().code(), absl::StatusCode::kNotFound);
}

// A failed write-out (torn, or ENOSPC) or fdatasync keeps the buffered pages: the next Sync writes
// them again, so every vector Put before it is durable — the torn page shared with a vector
// synced earlier included.
TEST_F(FaultInjectionTest, VectorFileSyncAfterAFailedOneMakesEveryPutDurable) {
  FaultInjectingFileSystem fs;
  const std::string path = dir_ + "/vectors.dat";
  std::vector<float> v(8, 1.5f), w(8, 2.5f), x(8, 3.5f);
  {
    auto vf = VectorFile::Create(path, 8, IoBackend::kPread, &fs);
    ASSERT_TRUE(vf.ok());
    ASSERT_TRUE((*vf)->Put(1, v.data()).ok());
    ASSERT_TRUE((*vf)->Sync().ok());
    ASSERT_TRUE((*vf)->Put(2, w.data()).ok());  // joins id 1's page
    fs.TearWrite("vectors.dat", 100);
    absl::Status s = (*vf)->Sync();
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_NE(s.message().find("vectors.dat"), std::string::npos) << s;
    // The torn page on disk held id 1 (synced): readers get the buffered copy meanwhile.
    const uint64_t one = 1;
    std::vector<float> got;
    ASSERT_TRUE((*vf)
                    ->ReadBatch({&one, 1},
                                [&](size_t, const float* f) {
                                  got.assign(f, f + 8);
                                  return absl::OkStatus();
                                })
                    .ok());
    EXPECT_EQ(got, v);
    ASSERT_TRUE((*vf)->Put(500, x.data()).ok());
    fs.Fail(FaultOp::kWrite, "vectors.dat", ENOSPC);
    EXPECT_EQ((*vf)->Sync().code(), absl::StatusCode::kResourceExhausted);
    fs.Fail(FaultOp::kSync, "vectors.dat", EIO);
    EXPECT_EQ((*vf)->Sync().code(), absl::StatusCode::kInternal);
    ASSERT_TRUE((*vf)->Sync().ok());
    fs.PowerOff();
  }
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  for (const auto& [id, want] : {std::pair{uint64_t{1}, v}, {uint64_t{2}, w}, {uint64_t{500}, x}}) {
    auto got = ReadVector(path, id);
    ASSERT_TRUE(got.ok()) << id << ": " << got.status();
    EXPECT_EQ(*got, want) << id;
  }
}

TEST_F(FaultInjectionTest, CopyTreeCopiesFilesAndDirectoriesAndReadsBackThroughTheSeam) {
  FileSystem& posix = *FileSystem::Default();
  ASSERT_TRUE(posix.CreateDirs(dir_ + "/from/sub/deeper").ok());
  ASSERT_TRUE(WriteFileSynced(posix, dir_ + "/from/a", "alpha").ok());
  ASSERT_TRUE(WriteFileSynced(posix, dir_ + "/from/sub/deeper/b", std::string(3 << 20, 'b')).ok());
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(CopyTree(fs, dir_ + "/from", dir_ + "/to").ok());
  EXPECT_EQ(*ReadFile(fs, dir_ + "/to/a"), "alpha");
  EXPECT_EQ(*ReadFile(fs, dir_ + "/to/sub/deeper/b"), std::string(3 << 20, 'b'));
  absl::StatusOr<FileStat> st = fs.Stat(dir_ + "/to/sub");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(st->is_directory);
  EXPECT_EQ(fs.Stat(dir_ + "/to/a")->size, 5u);
  EXPECT_GT(fs.Stat(dir_ + "/to/a")->modified_unix_seconds, 0);
  EXPECT_GE(fs.Count(FaultOp::kSync, "/to"), 5u);  // 2 files, 3 directories
  EXPECT_EQ(*Exists(fs, dir_ + "/to/sub/deeper/b"), true);
  EXPECT_EQ(*Exists(fs, dir_ + "/to/missing"), false);
  EXPECT_TRUE(absl::IsNotFound(ReadFile(fs, dir_ + "/to/missing").status()));
  EXPECT_TRUE(absl::IsAlreadyExists(CopyTree(fs, dir_ + "/from", dir_ + "/to")));
  // A read-only open cannot write.
  auto f = fs.Open(dir_ + "/to/a", OpenMode::kRead);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE((*f)->Write(0, Bytes("x")).ok());
  // Faults reach the copy: a full disk is ResourceExhausted.
  fs.Fail(FaultOp::kWrite, "/again/sub", ENOSPC);
  EXPECT_EQ(CopyTree(fs, dir_ + "/from", dir_ + "/again").code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(FaultInjectionTest, PowerOffAfterLetsThatManyOperationsThroughThenNothing) {
  FaultInjectingFileSystem fs;
  auto f = fs.Open(dir_ + "/p.dat", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  fs.PowerOffAfter(2);
  EXPECT_TRUE((*f)->Write(0, Bytes("one")).ok());
  EXPECT_TRUE((*f)->Sync().ok());
  EXPECT_FALSE((*f)->Write(3, Bytes("two")).ok());  // the power went here
  EXPECT_FALSE(fs.SyncDir(dir_).ok());
  // Removals and directory creation stop too.
  EXPECT_FALSE(fs.CreateDirs(dir_ + "/d").ok());
  EXPECT_FALSE(fs.RemoveAll(dir_ + "/p.dat").ok());
  EXPECT_FALSE(fs.Open(dir_ + "/q.dat", OpenMode::kCreate).ok());
  f->reset();
  ASSERT_TRUE(fs.DropUnsyncedData().ok());
  EXPECT_EQ(ReadAll(dir_ + "/p.dat"), "one");
  EXPECT_TRUE(fs.CreateDirs(dir_ + "/d").ok());  // power is back
}

TEST_F(FaultInjectionTest, FailAfterLetsThatManyMatchingOperationsThroughThenFailsOne) {
  FaultInjectingFileSystem fs;
  auto f = fs.Open(dir_ + "/m.dat", OpenMode::kCreate);
  auto other = fs.Open(dir_ + "/o.dat", OpenMode::kCreate);
  ASSERT_TRUE(f.ok() && other.ok());
  fs.FailAfter(2, "m.dat", ENOSPC);
  EXPECT_TRUE((*f)->Write(0, Bytes("one")).ok());
  EXPECT_TRUE((*other)->Write(0, Bytes("not counted")).ok());
  EXPECT_TRUE((*f)->Sync().ok());
  absl::Status s = (*f)->Write(3, Bytes("two"));  // the third: fails
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("m.dat"), std::string::npos) << s;
  EXPECT_TRUE((*f)->Write(3, Bytes("two")).ok());  // once only, and the power stays on
  EXPECT_TRUE(fs.CreateDirs(dir_ + "/d").ok());
  EXPECT_EQ(fs.injected(), 1u);
  fs.FailAfter(0, "m.dat", EIO);
  fs.Clear();  // removes a countdown that has not fired
  EXPECT_TRUE((*f)->Sync().ok());
}

// A sync under way when the power goes off finishes first and counts as synced: a caller that
// saw it succeed (and acknowledged a write on it) finds its data after the power loss. Before,
// the power went off in the middle of the sync, the data was dropped, and the sync returned OK.
TEST_F(FaultInjectionTest, ASyncUnderWayWhenThePowerGoesOffSurvivesIt) {
  FaultInjectingFileSystem fs;
  fs.SetSyncDelay(".dat", absl::Milliseconds(300));
  fs.SetSyncDelay(".log", absl::Milliseconds(300));
  auto f = fs.Open(dir_ + "/p.dat", OpenMode::kCreate);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Write(0, Bytes("acknowledged")).ok());
  std::unique_ptr<rocksdb::WritableFile> wal;
  ASSERT_TRUE(fs.rocksdb_env()->NewWritableFile(dir_ + "/000007.log", &wal, {}).ok());
  ASSERT_TRUE(wal->Append("record").ok());
  absl::Status shoal_sync;
  rocksdb::Status rocks_sync;
  std::thread shoal_thread([&] { shoal_sync = (*f)->Sync(); });
  std::thread rocks_thread([&] { rocks_sync = wal->Sync(); });
  // Both syncs are past the power check (and sleeping in the delay) before the power goes.
  while (fs.Count(FaultOp::kSync, "p.dat") + fs.Count(FaultOp::kSync, "000007.log") < 2) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  // As shoal::PowerCut does it: the power goes, and the disk is as it left it at once.
  fs.PowerOff();
  ASSERT_TRUE(fs.DropUnsyncedData(/*power_back_on=*/false).ok());
  shoal_thread.join();
  rocks_thread.join();
  EXPECT_TRUE(shoal_sync.ok()) << shoal_sync;
  EXPECT_TRUE(rocks_sync.ok()) << rocks_sync.ToString();
  EXPECT_FALSE(wal->Append("after").ok());
  EXPECT_EQ(ReadAll(dir_ + "/p.dat"), "acknowledged");
  EXPECT_EQ(ReadAll(dir_ + "/000007.log"), "record");
}

}  // namespace
}  // namespace shoal::storage
