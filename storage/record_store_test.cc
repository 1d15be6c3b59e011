#include "storage/record_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

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
