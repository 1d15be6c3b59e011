#include "shoal/db.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <random>
#include <thread>

namespace shoal {
namespace {

using ::testing::HasSubstr;

class DBTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "db_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Reopen();
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    db_.reset();
    auto db = DB::Open(dir_, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }
  std::string dir_;
  std::unique_ptr<DB> db_;
};

Record R(Key key, std::vector<float> v) {
  Record r;
  r.key = std::move(key);
  r.vector = std::move(v);
  return r;
}

TEST_F(DBTest, RoundTripsCollectionsRecordsAndSearch) {
  ASSERT_TRUE(db_->CreateCollection({"pts", 2, Metric::kL2}).ok());
  std::vector<Record> recs = {R(uint64_t{1}, {0, 0}), R(std::string("b"), {1, 0}),
                              R(uint64_t{3}, {5, 5})};
  recs[1].attributes = {{"price", 9.5}, {"n", int64_t{3}}, {"ok", false}, {"s", std::string("x")}};
  recs[1].tags = {"red", "new"};
  ASSERT_TRUE(db_->Upsert("pts", recs, {}).ok());

  auto info = db_->DescribeCollection("pts");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->num_vectors, 3u);
  EXPECT_EQ(info->spec.dimension, 2u);

  std::vector<Key> keys = {std::string("b"), uint64_t{2}};
  auto got = db_->Get("pts", keys);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE((*got)[0].has_value());
  EXPECT_EQ((*got)[0]->vector, recs[1].vector);
  EXPECT_EQ((*got)[0]->attributes, recs[1].attributes);
  EXPECT_EQ((*got)[0]->tags, recs[1].tags);
  EXPECT_FALSE((*got)[1].has_value());

  std::vector<float> queries = {0.9f, 0, 4, 4};
  auto hits = db_->Search("pts", queries, {.k = 2});
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 2u);
  ASSERT_EQ((*hits)[0].size(), 2u);
  EXPECT_EQ((*hits)[0][0].key, Key(std::string("b")));
  EXPECT_NEAR((*hits)[0][0].distance, 0.01f, 1e-6);
  EXPECT_EQ((*hits)[0][1].key, Key(uint64_t{1}));
  EXPECT_EQ((*hits)[1][0].key, Key(uint64_t{3}));
  EXPECT_FLOAT_EQ((*hits)[1][0].distance, 2.0f);
}

// Issue 20: a denormal vector in a cosine collection ranked first for every query (distance
// -Inf), and huge finite values made every later BuildIndex fail. Both are refused at the door,
// and the collection keeps answering and building.
TEST_F(DBTest, UnsearchableVectorsAreRejectedAndDoNotPoisonTheCollection) {
  ASSERT_TRUE(db_->CreateCollection({"cos", 8, Metric::kCosine}).ok());
  std::mt19937 rng(7);
  std::normal_distribution<float> gauss;
  std::vector<Record> recs;
  for (uint64_t i = 0; i < 300; ++i) {
    std::vector<float> v(8);
    for (float& x : v) x = gauss(rng);
    recs.push_back(R(i, v));
  }
  ASSERT_TRUE(db_->Upsert("cos", recs, {}).ok());
  for (std::vector<float> bad : {std::vector<float>(8, 1e-40f), std::vector<float>(8, 3e38f),
                                 std::vector<float>(8, 1e20f)}) {
    std::vector<Record> poison = {R(uint64_t{1000}, bad)};
    absl::Status s = db_->Upsert("cos", poison, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("records[0].vector"));
  }
  ASSERT_TRUE(db_->BuildIndex("cos", "spann:centroid_ratio=0.05").ok());
  auto hits = db_->Search("cos", recs[17].vector, {.k = 1});
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{17}));
  EXPECT_NEAR((*hits)[0][0].distance, 0.0f, 1e-5);
}

TEST_F(DBTest, UpsertReplacesAndDeleteRemoves) {
  ASSERT_TRUE(db_->CreateCollection({"c", 1, Metric::kL2}).ok());
  std::vector<Record> a = {R(uint64_t{1}, {1}), R(uint64_t{2}, {2})};
  ASSERT_TRUE(db_->Upsert("c", a, {}).ok());
  std::vector<Record> b = {R(uint64_t{1}, {10})};
  ASSERT_TRUE(db_->Upsert("c", b, {}).ok());
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, 2u);
  std::vector<float> q = {10};
  EXPECT_EQ((*db_->Search("c", q, {.k = 1}))[0][0].key, Key(uint64_t{1}));

  std::vector<Key> del = {uint64_t{1}, uint64_t{1}, uint64_t{99}};
  auto n = db_->Delete("c", del, {});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  auto hits = *db_->Search("c", q, {.k = 5});
  ASSERT_EQ(hits[0].size(), 1u);
  EXPECT_EQ(hits[0][0].key, Key(uint64_t{2}));
  Reopen();
  hits = *db_->Search("c", q, {.k = 5});
  ASSERT_EQ(hits[0].size(), 1u);
  EXPECT_EQ(hits[0][0].key, Key(uint64_t{2}));
}

TEST_F(DBTest, ReopenReturnsEveryAcknowledgedWrite) {
  ASSERT_TRUE(db_->CreateCollection({"c", 8, Metric::kL2}).ok());
  ASSERT_TRUE(db_->CreateCollection({"d", 3, Metric::kCosine}).ok());
  std::mt19937 rng(42);
  std::normal_distribution<float> g;
  std::vector<Record> written;
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<Record> recs;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> v(8);
      for (float& x : v) x = g(rng);
      recs.push_back(R(uint64_t(batch * 50 + i), v));
    }
    ASSERT_TRUE(db_->Upsert("c", recs, {.sync = batch % 2 == 0}).ok());
    written.insert(written.end(), recs.begin(), recs.end());
  }
  Reopen();
  auto list = db_->ListCollections();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].spec.name, "c");
  EXPECT_EQ((*list)[0].num_vectors, 1000u);
  EXPECT_EQ((*list)[1].spec.metric, Metric::kCosine);
  std::vector<Key> keys;
  for (const Record& r : written) keys.push_back(r.key);
  auto got = db_->Get("c", keys);
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < written.size(); ++i) {
    ASSERT_TRUE((*got)[i].has_value()) << i;
    EXPECT_EQ((*got)[i]->vector, written[i].vector);
  }
  // Every stored vector is its own nearest neighbour after reopen.
  auto hits = db_->Search("c", written[123].vector, {.k = 1});
  EXPECT_EQ((*hits)[0][0].key, written[123].key);
  // New ids do not collide with reloaded ones.
  std::vector<Record> more = {R(uint64_t{5000}, written[0].vector)};
  ASSERT_TRUE(db_->Upsert("c", more, {}).ok());
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, 1001u);
}

TEST_F(DBTest, CosineAndInnerProductDistances) {
  ASSERT_TRUE(db_->CreateCollection({"cos", 2, Metric::kCosine}).ok());
  ASSERT_TRUE(db_->CreateCollection({"ip", 2, Metric::kInnerProduct}).ok());
  std::vector<Record> recs = {R(uint64_t{1}, {10, 0}), R(uint64_t{2}, {0, 1})};
  ASSERT_TRUE(db_->Upsert("cos", recs, {}).ok());
  ASSERT_TRUE(db_->Upsert("ip", recs, {}).ok());
  std::vector<float> q = {1, 1};
  auto cos = *db_->Search("cos", q, {.k = 2});
  EXPECT_NEAR(cos[0][0].distance, 1 - std::sqrt(0.5), 1e-6);
  auto ip = *db_->Search("ip", q, {.k = 2});
  EXPECT_EQ(ip[0][0].key, Key(uint64_t{1}));
  EXPECT_FLOAT_EQ(ip[0][0].distance, -10);
  // Get returns the vector as written, not normalised.
  std::vector<Key> k = {uint64_t{1}};
  EXPECT_EQ((*db_->Get("cos", k))[0]->vector, std::vector<float>({10, 0}));
}

TEST_F(DBTest, ErrorsCarryCanonicalCodesAndFields) {
  ASSERT_TRUE(db_->CreateCollection({"c", 2, Metric::kL2}).ok());
  auto dup = db_->CreateCollection({"c", 2, Metric::kL2});
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(dup.message(), HasSubstr("name"));
  EXPECT_EQ(db_->CreateCollection({"bad name", 2, Metric::kL2}).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<Record> recs = {R(uint64_t{1}, {1, 2})};
  auto unknown = db_->Upsert("nope", recs, {});
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("nope"));
  EXPECT_EQ(db_->DropCollection("nope").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(db_->DescribeCollection("nope").status().code(), absl::StatusCode::kNotFound);
  std::vector<Record> wrong = {R(uint64_t{1}, {1, 2, 3})};
  auto s = db_->Upsert("c", wrong, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("records[0].vector"));
  std::vector<float> q = {1, 2};
  EXPECT_EQ(db_->Search("c", q, {.k = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(db_->Search("c", q, {.k = 1u << 30}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A failed batch writes nothing.
  std::vector<Record> half_bad = {R(uint64_t{7}, {1, 2}), R(uint64_t{8}, {1, NAN})};
  EXPECT_FALSE(db_->Upsert("c", half_bad, {}).ok());
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, 0u);
}

TEST_F(DBTest, DropThenRecreateStartsEmpty) {
  ASSERT_TRUE(db_->CreateCollection({"c", 1, Metric::kL2}).ok());
  std::vector<Record> recs = {R(uint64_t{1}, {1})};
  ASSERT_TRUE(db_->Upsert("c", recs, {}).ok());
  ASSERT_TRUE(db_->DropCollection("c").ok());
  ASSERT_TRUE(db_->CreateCollection({"c", 1, Metric::kL2}).ok());
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, 0u);
  Reopen();
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, 0u);
}

TEST_F(DBTest, SecondOpenIsUnavailable) {
  auto second = DB::Open(dir_, Options{});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

TEST_F(DBTest, ConcurrentWritersAndSearchersSeeWholeBatches) {
  ASSERT_TRUE(db_->CreateCollection({"c", 4, Metric::kL2}).ok());
  constexpr int kWriters = 2, kBatches = 50, kBatch = 20;
  std::vector<std::thread> threads;
  std::atomic<bool> torn{false};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Record> recs;
        for (int i = 0; i < kBatch; ++i) {
          recs.push_back(R(uint64_t((w * kBatches + b) * kBatch + i), {float(w), float(b), 0, 0}));
        }
        ASSERT_TRUE(db_->Upsert("c", recs, {}).ok());
      }
    });
  }
  threads.emplace_back([&] {
    std::vector<float> q = {0, 0, 0, 0};
    for (int i = 0; i < 200; ++i) {
      auto n = db_->DescribeCollection("c")->num_vectors;
      if (n % kBatch != 0) torn = true;
      ASSERT_TRUE(db_->Search("c", q, {.k = 5}).ok());
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_FALSE(torn);
  EXPECT_EQ(db_->DescribeCollection("c")->num_vectors, uint64_t(kWriters * kBatches * kBatch));
}

}  // namespace
}  // namespace shoal
