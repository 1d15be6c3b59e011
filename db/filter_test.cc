// Filtered search through the public API: flat (exact) and SPANN, at selectivities 50%, 5% and
// 0.1%, against brute force over the vectors that pass; and/or/not; validation; writes after a
// build; reopen.
#include "shoal/filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "base/test_temp_dir.h"
#include "index/flat/flat_index.h"
#include "shoal/dataset.h"
#include "shoal/db.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

constexpr size_t kK = 10;
constexpr size_t kQueries = 100;

// What the test knows of each record, to decide independently which ones pass a filter.
struct Row {
  bool live = true;
  int64_t bucket = 0;
  double price = 0;
  std::string lang;
  bool even = false;
  bool tenth = false;
  bool rare = false;
  bool flag = false;
};

struct Case {
  std::string name;
  Filter filter;
  std::function<bool(const Row&)> passes;
};

std::vector<Case> Cases() {
  return {
      {"50%_tag", HasTag("even"), [](const Row& r) { return r.even; }},
      {"50%_range", Range("bucket", 0, 499), [](const Row& r) { return r.bucket <= 499; }},
      {"5%_range", Range("bucket", 100, 149.5),
       [](const Row& r) { return r.bucket >= 100 && r.bucket <= 149; }},
      // A tag alone is answered from the tag's own ids (search_planner.cc, TagFilter): 5% and
      // 0.1% take the exact path, 50% the index's scan.
      {"5%_tag", HasTag("tenth"), [](const Row& r) { return r.tenth; }},
      {"0.1%_tag", HasTag("rare"), [](const Row& r) { return r.rare; }},
      {"unknown_tag", HasTag("nope"), [](const Row&) { return false; }},
      // An And with a tag of few ids is listed from that tag, each id checked against the whole
      // filter; with two tags, from the one of fewer ids (every rare row is odd: none pass).
      {"0.1%_tag_and_eq", And({Eq("lang", "en"), HasTag("rare")}),
       [](const Row& r) { return r.rare && r.lang == "en"; }},
      {"0.1%_tag_and_range", And({HasTag("rare"), Range("price", 0, 49.5)}),
       [](const Row& r) { return r.rare && r.price <= 49.5; }},
      {"two_tags", And({HasTag("even"), HasTag("rare")}),
       [](const Row& r) { return r.even && r.rare; }},
      {"unknown_tag_and", And({HasTag("nope"), Range("price", 0, 100)}),
       [](const Row&) { return false; }},
      // An Eq of a string or a boolean is a set of ids too (AttributeIndex::LeafIds): alone, or
      // driving an And when it is the smaller set.
      {"33%_eq_string", Eq("lang", "fr"), [](const Row& r) { return r.lang == "fr"; }},
      {"1%_eq_bool", Eq("flag", true), [](const Row& r) { return r.flag; }},
      {"99%_eq_bool", Eq("flag", false), [](const Row& r) { return !r.flag; }},
      {"unknown_string", Eq("lang", "xx"), [](const Row&) { return false; }},
      {"1%_bool_and_range", And({Range("bucket", 0, 499), Eq("flag", true)}),
       [](const Row& r) { return r.flag && r.bucket <= 499; }},
      {"5%_and_not", And({HasTag("tenth"), Not(Range("price", 0, 24.5))}),
       [](const Row& r) { return r.tenth && r.price > 24.5; }},
      {"5%_or", Or({Eq("bucket", int64_t{1}), Range("price", 10, 12), Eq("lang", "fr")}),
       [](const Row& r) {
         return r.bucket == 1 || (r.price >= 10 && r.price <= 12) || r.lang == "fr";
       }},
      {"0.1%_eq", Eq("bucket", int64_t{7}), [](const Row& r) { return r.bucket == 7; }},
      {"0.1%_eq_double", Eq("bucket", 8.0), [](const Row& r) { return r.bucket == 8; }},
      {"0.1%_and", And({Range("bucket", 10, 19), HasTag("even"), Eq("lang", "en")}),
       [](const Row& r) { return r.bucket >= 10 && r.bucket <= 19 && r.even && r.lang == "en"; }},
      {"none", Eq("bucket", int64_t{5000}), [](const Row&) { return false; }},
      {"unknown_attribute", Eq("nope", int64_t{1}), [](const Row&) { return false; }},
  };
}

Record MakeRecord(size_t i, const Matrix& m, Row* row) {
  row->bucket = static_cast<int64_t>(i % 1000);
  row->price = static_cast<double>(i % 200) * 0.5;
  row->lang = i % 3 == 0 ? "en" : (i % 3 == 1 ? "de" : "fr");
  row->even = i % 2 == 0;
  row->tenth = i % 20 == 3;
  row->flag = i % 100 == 1;
  Record r{uint64_t(i), std::vector<float>(m.Row(i), m.Row(i) + m.cols)};
  r.attributes = {
      {"bucket", row->bucket}, {"price", row->price}, {"lang", row->lang}, {"flag", row->flag}};
  if (row->even) r.tags.push_back("even");
  if (row->tenth) r.tags.push_back("tenth");
  row->rare = i % 1000 == 7;
  if (row->rare) r.tags.push_back("rare");
  return r;
}

class FilterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto ds = LoadDataset("synthetic:n=20000,d=32,seed=5");
    ASSERT_TRUE(ds.ok()) << ds.status();
    data_ = new AnnDataset(*std::move(ds));
  }
  static void TearDownTestSuite() { delete data_; }

  void SetUp() override {
    Open();
    ASSERT_TRUE(db_->CreateCollection({"c", uint32_t(data_->train.cols), Metric::kL2}).ok());
    rows_.resize(data_->train.rows);
    std::vector<Record> batch;
    for (size_t i = 0; i < data_->train.rows; ++i) {
      batch.push_back(MakeRecord(i, data_->train, &rows_[i]));
      if (batch.size() == 5000) {
        ASSERT_TRUE(db_->Upsert("c", batch, {}).ok());
        batch.clear();
      }
    }
  }

  void Open() {
    db_.reset();
    auto db = DB::Open(dir_.path(), {});
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
  }

  const float* Query(size_t q) const { return data_->test.Row(q); }
  std::span<const float> Queries() const {
    return {data_->test.data.data(), kQueries * data_->test.cols};
  }

  // Exact top-k keys of each query over the live rows that pass.
  std::vector<std::vector<uint64_t>> Truth(const Case& c, size_t* passing) const {
    index::FlatIndex flat(data_->train.cols, index::Metric::kL2);
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].live && c.passes(rows_[i])) flat.Add(i, data_->train.Row(i));
    }
    *passing = flat.size();
    auto found = flat.Search(Query(0), kQueries, kK, 1);
    std::vector<std::vector<uint64_t>> out(kQueries);
    for (size_t q = 0; q < kQueries; ++q) {
      for (const auto& nb : found[q]) out[q].push_back(nb.id);
    }
    return out;
  }

  // Runs every case; checks that hits pass, that min(k, passing) come back, and returns the
  // recall of each case against brute force. With `exact`, the keys must equal the truth.
  std::vector<double> CheckCases(bool exact) {
    std::vector<double> recalls;
    for (const Case& c : Cases()) {
      size_t passing = 0;
      const auto truth = Truth(c, &passing);
      SearchParams params{.k = kK};
      params.filter = &c.filter;
      auto hits = db_->Search("c", Queries(), params);
      EXPECT_TRUE(hits.ok()) << c.name << ": " << hits.status();
      if (!hits.ok()) return recalls;
      size_t found = 0, total = 0;
      for (size_t q = 0; q < kQueries; ++q) {
        EXPECT_EQ((*hits)[q].size(), std::min(kK, passing)) << c.name << " query " << q;
        std::vector<uint64_t> keys;
        for (const Hit& h : (*hits)[q]) {
          const uint64_t key = std::get<uint64_t>(h.key);
          keys.push_back(key);
          EXPECT_TRUE(rows_[key].live && c.passes(rows_[key])) << c.name << " returned " << key;
        }
        if (exact) {
          EXPECT_EQ(keys, truth[q]) << c.name << " query " << q;
        }
        for (uint64_t id : truth[q]) found += std::count(keys.begin(), keys.end(), id);
        total += truth[q].size();
      }
      // A single query takes the row-by-row scan rather than the batched kernel.
      auto one = db_->Search("c", {Query(3), data_->test.cols}, params);
      EXPECT_TRUE(one.ok());
      if (one.ok()) {
        EXPECT_EQ((*one)[0], (*hits)[3]) << c.name;
      }
      const double recall = total == 0 ? 1.0 : double(found) / double(total);
      std::cout << "  " << c.name << ": selectivity " << 100.0 * passing / rows_.size()
                << "%, recall@10 " << recall << "\n";
      recalls.push_back(recall);
    }
    return recalls;
  }

  void ExpectRecallAtLeast(const std::vector<double>& recalls, double floor) {
    const auto cases = Cases();
    ASSERT_EQ(recalls.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) EXPECT_GE(recalls[i], floor) << cases[i].name;
  }

  static AnnDataset* data_;
  base::TestTempDir dir_{"filter"};  // outlives db_
  std::unique_ptr<DB> db_;
  std::vector<Row> rows_;
};

AnnDataset* FilterTest::data_ = nullptr;

TEST_F(FilterTest, FlatFilteredSearchEqualsBruteForce) {
  ExpectRecallAtLeast(CheckCases(/*exact=*/true), 1.0);
}

TEST_F(FilterTest, SpannFilteredSearchReachesRecall095AndReturnsK) {
  ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.02").ok());
  ExpectRecallAtLeast(CheckCases(/*exact=*/false), 0.95);
}

TEST_F(FilterTest, SpannScansDuringTheSearchAndTopsUpShortQueriesExactly) {
  ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.02").ok());
  // 11% pass: too many for the exact path, so the SpannIndex scans with the filter.
  const Filter f = Range("bucket", 0, 109);
  SearchStats stats;
  SearchParams params{.k = kK, .stats = &stats};
  params.filter = &f;
  ASSERT_TRUE(db_->Search("c", Queries(), params).ok());
  EXPECT_GT(stats.postings_read, 0u);
  EXPECT_LT(stats.vectors_scored, kQueries * rows_.size() / 2);
  // One posting per query holds about 11 passing vectors: some queries come up short of k and
  // must still get k hits, all passing.
  params.max_postings = 1;
  auto hits = db_->Search("c", Queries(), params);
  ASSERT_TRUE(hits.ok()) << hits.status();
  for (const auto& q : *hits) {
    ASSERT_EQ(q.size(), kK);
    for (const Hit& h : q) EXPECT_LE(rows_[std::get<uint64_t>(h.key)].bucket, 109);
  }
}

TEST_F(FilterTest, WritesAfterBuildAreFilteredByTheirNewAttributes) {
  ASSERT_TRUE(db_->BuildIndex("c", "spann:centroid_ratio=0.02").ok());
  // Rewrite 300 records into bucket 7 with new tags, delete every old bucket-7 record but one,
  // and add 50 new records to bucket 7.
  std::vector<Record> batch;
  for (size_t i = 1000; i < 1300; ++i) {
    Record r = MakeRecord(i, data_->train, &rows_[i]);
    rows_[i].bucket = 7;
    rows_[i].even = !rows_[i].even;
    rows_[i].tenth = false;
    rows_[i].rare = false;
    r.attributes["bucket"] = int64_t{7};
    r.tags = rows_[i].even ? std::vector<std::string>{"even"} : std::vector<std::string>{};
    batch.push_back(r);
  }
  ASSERT_TRUE(db_->Upsert("c", batch, {}).ok());
  std::vector<Key> gone;
  for (size_t i = 1007; i < rows_.size(); i += 1000) {
    gone.push_back(uint64_t(i));
    rows_[i].live = false;
  }
  ASSERT_TRUE(db_->Delete("c", gone, {}).ok());
  ExpectRecallAtLeast(CheckCases(/*exact=*/false), 0.95);
  Open();  // reopen with the index: attributes come back from the records
  ExpectRecallAtLeast(CheckCases(/*exact=*/false), 0.95);
}

TEST_F(FilterTest, ReopenWithoutIndexKeepsAttributes) {
  Open();
  ExpectRecallAtLeast(CheckCases(/*exact=*/true), 1.0);
}

TEST_F(FilterTest, InvalidFilterIsInvalidArgumentNamingTheNode) {
  const Filter bad = And({HasTag("even"), Range("price", std::nan(""), 3)});
  SearchParams params{.k = kK};
  params.filter = &bad;
  auto hits = db_->Search("c", {Query(0), data_->test.cols}, params);
  ASSERT_TRUE(absl::IsInvalidArgument(hits.status())) << hits.status();
  EXPECT_THAT(hits.status().message(), HasSubstr("filter.and[1].range.lo"));
  const Filter empty_or = Or({});
  params.filter = &empty_or;
  EXPECT_THAT(db_->Search("c", {Query(0), data_->test.cols}, params).status().message(),
              HasSubstr("filter.or"));
}

}  // namespace
}  // namespace shoal
