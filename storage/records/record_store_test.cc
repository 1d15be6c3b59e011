#include "storage/records/record_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "rocksdb/slice_transform.h"
#include "storage/records/record_codec.h"

namespace shoal::storage {
namespace {

class RecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "record_store_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<RecordStore> OpenStore() {
    auto store = RecordStore::Open(dir_, {});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  std::string dir_;
};

Record MakeRecord(uint64_t key, float v) {
  Record r;
  r.key = key;
  r.vector = {v, v + 1};
  return r;
}

TEST_F(RecordStoreTest, CommittedRecordsSurviveReopen) {
  uint32_t cid = 0;
  {
    auto store = OpenStore();
    auto c = store->CreateCollection({"c", 2, Metric::kL2});
    ASSERT_TRUE(c.ok());
    cid = c->id;
    auto batch = store->NewBatch();
    for (uint64_t i = 0; i < 10; ++i) batch.PutRecord(cid, i, MakeRecord(100 + i, i), true);
    batch.SetNextInternalId(cid, 10);
    ASSERT_TRUE(store->Commit(batch, /*sync=*/true).ok());
  }
  auto store = OpenStore();
  auto catalog = store->LoadCatalog();
  ASSERT_TRUE(catalog.ok());
  ASSERT_EQ(catalog->size(), 1u);
  EXPECT_EQ((*catalog)[0].spec.name, "c");
  EXPECT_EQ((*catalog)[0].spec.dimension, 2u);
  EXPECT_EQ((*catalog)[0].next_internal_id, 10u);
  std::vector<uint64_t> ids;
  ASSERT_TRUE(store
                  ->ScanRecords(cid,
                                [&](uint64_t iid, Record&& r) {
                                  EXPECT_EQ(std::get<uint64_t>(r.key), 100 + iid);
                                  ids.push_back(iid);
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(ids.size(), 10u);
  EXPECT_EQ(**store->LookupKey(cid, Key(uint64_t{105})), 5u);
  EXPECT_FALSE(store->LookupKey(cid, Key(uint64_t{5}))->has_value());
}

TEST_F(RecordStoreTest, DropRemovesOnlyThatCollection) {
  auto store = OpenStore();
  auto a = *store->CreateCollection({"a", 2, Metric::kL2});
  auto b = *store->CreateCollection({"b", 2, Metric::kCosine});
  EXPECT_NE(a.id, b.id);
  auto batch = store->NewBatch();
  batch.PutRecord(a.id, 0, MakeRecord(1, 1), true);
  batch.PutRecord(b.id, 0, MakeRecord(1, 2), true);
  ASSERT_TRUE(store->Commit(batch, false).ok());
  ASSERT_TRUE(store->DropCollection(a).ok());
  EXPECT_FALSE(store->GetRecord(a.id, 0)->has_value());
  EXPECT_FALSE(store->LookupKey(a.id, Key(uint64_t{1}))->has_value());
  ASSERT_TRUE(store->GetRecord(b.id, 0)->has_value());
  auto catalog = *store->LoadCatalog();
  ASSERT_EQ(catalog.size(), 1u);
  EXPECT_EQ(catalog[0].spec.metric, Metric::kCosine);
}

TEST_F(RecordStoreTest, SecondOpenOfSameDirectoryIsUnavailable) {
  auto first = OpenStore();
  auto second = RecordStore::Open(dir_, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

TEST_F(RecordStoreTest, DeleteRecordRemovesRecordAndKey) {
  auto store = OpenStore();
  auto c = *store->CreateCollection({"c", 2, Metric::kL2});
  auto put = store->NewBatch();
  put.PutRecord(c.id, 4, MakeRecord(9, 1), true);
  ASSERT_TRUE(store->Commit(put, false).ok());
  auto del = store->NewBatch();
  del.DeleteRecord(c.id, 4, Key(uint64_t{9}));
  ASSERT_TRUE(store->Commit(del, false).ok());
  EXPECT_FALSE(store->GetRecord(c.id, 4)->has_value());
  EXPECT_FALSE(store->LookupKey(c.id, Key(uint64_t{9}))->has_value());
}

}  // namespace
}  // namespace shoal::storage

namespace shoal::storage {
namespace {

// Batches reuse the buffers of committed ones (write_batch_pool.h): each writes its own rows only.
TEST_F(RecordStoreTest, ABatchAfterCommittedOnesWritesOnlyItsOwnRows) {
  auto store = OpenStore();
  const uint32_t cid = store->CreateCollection({"c", 2, Metric::kL2})->id;
  auto put = store->NewBatch(64 << 10);
  for (uint64_t i = 0; i < 10; ++i) put.PutRecord(cid, i, MakeRecord(100 + i, i), true);
  ASSERT_TRUE(store->Commit(put, /*sync=*/false).ok());
  {
    auto del = store->NewBatch(64 << 10);
    for (uint64_t i = 0; i < 10; ++i) del.DeleteRecord(cid, i, Key(100 + i));
    ASSERT_TRUE(store->Commit(del, /*sync=*/false).ok());
  }
  auto one = store->NewBatch(64 << 10);
  one.PutRecord(cid, 20, MakeRecord(120, 20), true);
  EXPECT_EQ(one.Count(), 2u);  // the record row and its key row, nothing carried over
  ASSERT_TRUE(store->Commit(one, /*sync=*/false).ok());
  std::vector<uint64_t> ids;
  ASSERT_TRUE(store
                  ->ScanRecords(cid,
                                [&](uint64_t iid, Record&&) {
                                  ids.push_back(iid);
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(ids, std::vector<uint64_t>{20});
}

TEST_F(RecordStoreTest, IndexRowsRoundTripAndAreReplacedWhole) {
  {
    auto store = OpenStore();
    auto c = *store->CreateCollection({"c", 2, Metric::kL2});
    EXPECT_FALSE(store->LoadIndex(c.id)->has_value());
    std::vector<PostingRow> rows = {{0, 0, 2, 5000, 7}, {1, 2, 1, 100, 3}};
    ASSERT_TRUE(store->CommitIndex(c.id, "manifest-1", rows).ok());
    auto batch = store->NewBatch();
    batch.MarkStale(c.id, 42);
    ASSERT_TRUE(store->Commit(batch, true).ok());
  }
  auto store = OpenStore();
  auto idx = store->LoadIndex(1);
  ASSERT_TRUE(idx.ok() && idx->has_value()) << idx.status();
  EXPECT_EQ((*idx)->manifest, "manifest-1");
  ASSERT_EQ((*idx)->postings.size(), 2u);
  EXPECT_EQ((*idx)->postings[0].bytes, 5000u);
  EXPECT_EQ((*idx)->postings[1].first_page, 2u);
  EXPECT_EQ((*idx)->postings[1].count, 3u);
  EXPECT_EQ((*idx)->stale_ids, std::vector<uint64_t>({42}));
  // A new build replaces postings and clears stale marks.
  std::vector<PostingRow> rows = {{0, 9, 1, 10, 1}};
  ASSERT_TRUE(store->CommitIndex(1, "manifest-2", rows).ok());
  idx = store->LoadIndex(1);
  EXPECT_EQ((*idx)->postings.size(), 1u);
  EXPECT_TRUE((*idx)->stale_ids.empty());
  ASSERT_TRUE(store->ClearIndex(1).ok());
  EXPECT_FALSE(store->LoadIndex(1)->has_value());
}

// The index family's memtable hint groups posting rows and tombstone rows by (collection, kind);
// rows written out of order, in groups of several collections, still read back in order.
TEST_F(RecordStoreTest, IndexRowHintGroupsRowsByCollectionAndKind) {
  auto hint = NewIndexRowHint();
  auto key = [](uint32_t cid, char kind, uint64_t id, int id_bytes) {
    std::string k = CollectionPrefix(cid);
    k.push_back(kind);
    for (int i = id_bytes - 1; i >= 0; --i) k.push_back(static_cast<char>(id >> (8 * i)));
    return k;
  };
  EXPECT_TRUE(hint->InDomain(key(3, 'P', 7, 4)));   // a posting row
  EXPECT_TRUE(hint->InDomain(key(3, 'S', 7, 8)));   // a tombstone row
  EXPECT_FALSE(hint->InDomain(key(3, 'M', 0, 0)));  // the manifest
  EXPECT_FALSE(hint->InDomain(key(3, 'W', 0, 0)));  // the watermark
  EXPECT_FALSE(hint->InDomain(key(3, 'P', 7, 8)));
  EXPECT_EQ(hint->Transform(key(3, 'P', 7, 4)).ToString(), key(3, 'P', 0, 0));
  EXPECT_EQ(hint->Transform(key(3, 'S', uint64_t{1} << 40, 8)).ToString(), key(3, 'S', 0, 0));

  {
    auto store = OpenStore();
    for (const char* name : {"a", "b"}) {
      auto c = store->CreateCollection({name, 2, Metric::kL2});
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE(store->CommitIndex(c->id, "m", {}).ok());
    }
    for (uint32_t round = 0; round < 3; ++round) {
      auto batch = store->NewBatch();
      for (uint64_t iid : {90, 10, 50}) {
        for (uint32_t cid : {2, 1}) batch.MarkStale(cid, iid + round);
      }
      ASSERT_TRUE(store->Commit(batch, true).ok());
      for (uint32_t cid : {2, 1}) {
        IndexChange change;
        for (uint32_t p : {40, 5, 17, 3}) {
          change.put.push_back({p + round, p, 1, 100, cid * 1000 + p + round});
        }
        change.indexed_below = 100 + round;
        change.erase_tombstones = {10 + round};
        ASSERT_TRUE(store->CommitIndexChange(cid, change, true).ok());
      }
    }
  }
  auto store = OpenStore();
  for (uint32_t cid : {1, 2}) {
    auto idx = store->LoadIndex(cid);
    ASSERT_TRUE(idx.ok() && idx->has_value()) << idx.status();
    std::vector<uint32_t> postings;
    for (const PostingRow& row : (*idx)->postings) {
      postings.push_back(row.posting);
      EXPECT_EQ(row.count, cid * 1000 + row.posting);
    }
    EXPECT_EQ(postings, std::vector<uint32_t>({3, 4, 5, 6, 7, 17, 18, 19, 40, 41, 42}))
        << "collection " << cid;
    EXPECT_EQ((*idx)->stale_ids, std::vector<uint64_t>({50, 51, 52, 90, 91, 92}));
  }
}

TEST_F(RecordStoreTest, ScanKeysAndScanRecordsFromAnId) {
  auto store = OpenStore();
  auto c = *store->CreateCollection({"c", 2, Metric::kL2});
  auto batch = store->NewBatch();
  for (uint64_t i = 0; i < 6; ++i) batch.PutRecord(c.id, i, MakeRecord(10 + i, i), true);
  Record named = MakeRecord(0, 1);
  named.key = std::string("name");
  batch.PutRecord(c.id, 6, named, true);
  ASSERT_TRUE(store->Commit(batch, false).ok());
  std::map<uint64_t, Key> keys;
  ASSERT_TRUE(store
                  ->ScanKeys(c.id,
                             [&](Key&& k, uint64_t iid) {
                               keys[iid] = std::move(k);
                               return absl::OkStatus();
                             })
                  .ok());
  ASSERT_EQ(keys.size(), 7u);
  EXPECT_EQ(keys[3], Key(uint64_t{13}));
  EXPECT_EQ(keys[6], Key(std::string("name")));
  std::vector<uint64_t> from4;
  ASSERT_TRUE(store
                  ->ScanRecords(
                      c.id,
                      [&](uint64_t iid, Record&&) {
                        from4.push_back(iid);
                        return absl::OkStatus();
                      },
                      4)
                  .ok());
  EXPECT_EQ(from4, std::vector<uint64_t>({4, 5, 6}));
}

}  // namespace
}  // namespace shoal::storage

namespace shoal::storage {
namespace {

// The .sst files of the store's directory, by name.
std::vector<std::string> Tables(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".sst") out.push_back(e.path().filename());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A crash mid-flush or mid-compaction leaves tables the MANIFEST never named; their data is
// still in the WAL or the live tables, so they are harmless. A table holding data the store
// lacks is what a MANIFEST that lost an edit leaves: not harmless. (Checked read-only, as
// Verify does: a read-write open deletes unreferenced tables.)
TEST_F(RecordStoreTest, UnreferencedTablesAreHarmlessOnlyWhenTheStoreHoldsTheirData) {
  namespace fs = std::filesystem;
  const std::string saved = dir_ + ".saved";
  fs::create_directory(saved);
  uint32_t cid = 0;
  {
    auto store = OpenStore();
    cid = store->CreateCollection({"c", 2, Metric::kL2})->id;
    auto batch = store->NewBatch();
    for (uint64_t i = 0; i < 50; ++i) batch.PutRecord(cid, i, MakeRecord(100 + i, i), true);
    ASSERT_TRUE(store->Commit(batch, true).ok());
    ASSERT_TRUE(store->Compact(std::nullopt).ok());  // the records into tables
  }
  const std::vector<std::string> live = Tables(dir_);
  ASSERT_FALSE(live.empty());
  for (const std::string& table : live) {
    fs::copy_file(dir_ + "/" + table, saved + "/" + table);
    fs::copy_file(dir_ + "/" + table, dir_ + "/9" + table);  // an interrupted compaction's output
  }
  fs::copy_file(dir_ + "/" + live[0], dir_ + "/8000000.sst");
  fs::resize_file(dir_ + "/8000000.sst", 100);  // a table whose write was cut short
  auto read_only = [&] {
    auto store = RecordStore::Open(dir_, {.read_only = true});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  };
  {
    auto found = read_only()->UnreferencedTableFiles();
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_EQ(found->size(), live.size() + 1);
    for (const auto& t : *found) EXPECT_TRUE(t.harmless) << t.name << ": " << t.detail;
  }
  {  // The read-write open removes them; then the records go away for good.
    auto store = OpenStore();
    auto del = store->NewBatch();
    for (uint64_t i = 0; i < 50; ++i) del.DeleteRecord(cid, i, Key(uint64_t{100 + i}));
    ASSERT_TRUE(store->Commit(del, true).ok());
    ASSERT_TRUE(store->Compact(std::nullopt).ok());
  }
  // Numbered above every live table, as a table whose MANIFEST edit was lost would be.
  for (size_t i = 0; i < live.size(); ++i) {
    fs::copy_file(saved + "/" + live[i], dir_ + "/" + std::to_string(99000000 + i) + ".sst");
  }
  auto found = read_only()->UnreferencedTableFiles();
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), live.size());
  size_t lost = 0;
  for (const auto& t : *found) lost += t.harmless ? 0 : 1;
  EXPECT_GE(lost, 1u) << "the old records table is data the store no longer has";
  fs::remove_all(saved);
}

}  // namespace
}  // namespace shoal::storage
