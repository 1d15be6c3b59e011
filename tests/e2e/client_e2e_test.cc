// End-to-end through the C++ client SDK (rpc/client/shoal_client.h): a real `shoald` child
// process on port 0, every RPC, aliases, streaming ingest, index builds with progress,
// snapshot + restore (and its refusals), stats. Security, limits and metrics are in
// security_e2e_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "rpc/client/shoal_client.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::e2e {
namespace {

using client::Client;

std::vector<Record> RandomRecords(size_t n, uint32_t dimension, uint64_t first_id,
                                  std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Record> records(n);
  for (size_t i = 0; i < n; ++i) {
    records[i].key = first_id + i;
    records[i].vector.resize(dimension);
    for (float& x : records[i].vector) x = uniform(rng);
    records[i].attributes["even"] = static_cast<bool>((first_id + i) % 2 == 0);
  }
  return records;
}

class ClientE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = MakeTempDir();
    snapshot_dir_ = MakeTempDir();
    ASSERT_FALSE(data_dir_.empty());
    Start();
  }
  void TearDown() override {
    client_.reset();
    shoald_.reset();
    std::filesystem::remove_all(data_dir_);
    std::filesystem::remove_all(snapshot_dir_);
  }
  void Start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--snapshot-dir", snapshot_dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    shoald_ = std::make_unique<ShoaldProcess>();
    absl::Status started = shoald_->Start(data_dir_, args);
    ASSERT_TRUE(started.ok()) << started;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(shoald_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::string data_dir_;
  std::string snapshot_dir_;
  std::unique_ptr<ShoaldProcess> shoald_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientE2eTest, CollectionsAndAliases) {
  ASSERT_TRUE(client_->IsServing().value_or(false));
  absl::StatusOr<CollectionInfo> created =
      client_->CreateCollection({.name = "docs_v1", .dimension = 4, .metric = Metric::kCosine});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->spec.metric, Metric::kCosine);
  ASSERT_TRUE(client_->CreateCollection({.name = "docs_v2", .dimension = 4}).ok());

  ASSERT_TRUE(client_->CreateAlias("docs", "docs_v1").ok());
  EXPECT_TRUE(absl::IsAlreadyExists(client_->CreateAlias("docs", "docs_v2")));
  EXPECT_TRUE(absl::IsAlreadyExists(client_->CreateAlias("docs_v2", "docs_v1")));
  EXPECT_TRUE(absl::IsNotFound(client_->CreateAlias("other", "nope")));
  absl::StatusOr<CollectionInfo> described = client_->DescribeCollection("docs");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->spec.name, "docs_v1");
  EXPECT_EQ(described->aliases, std::vector<std::string>{"docs"});

  // Writes and searches through the alias land in the target; switching it is one call.
  Record record{.key = uint64_t{1}, .vector = {1, 0, 0, 0}};
  ASSERT_TRUE(client_->Upsert("docs", {&record, 1}).ok());
  ASSERT_TRUE(client_->AlterAlias("docs", "docs_v2").ok());
  EXPECT_EQ(client_->DescribeCollection("docs_v1")->num_vectors, 1u);
  EXPECT_EQ(client_->DescribeCollection("docs")->num_vectors, 0u);
  absl::StatusOr<std::vector<AliasInfo>> aliases = client_->ListAliases();
  ASSERT_TRUE(aliases.ok());
  EXPECT_EQ(*aliases, (std::vector<AliasInfo>{{"docs", "docs_v2"}}));
  EXPECT_TRUE(client_->ListAliases("docs_v1")->empty());

  // A collection with an alias cannot be dropped; an alias is not a collection to drop.
  absl::Status drop = client_->DropCollection("docs_v2");
  EXPECT_TRUE(absl::IsFailedPrecondition(drop)) << drop;
  EXPECT_TRUE(absl::IsNotFound(client_->DropCollection("docs")));
  ASSERT_TRUE(client_->DropAlias("docs").ok());
  EXPECT_TRUE(absl::IsNotFound(client_->DropAlias("docs")));
  ASSERT_TRUE(client_->DropCollection("docs_v2").ok());
  absl::StatusOr<std::vector<CollectionInfo>> list = client_->ListCollections();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].spec.name, "docs_v1");
}

TEST_F(ClientE2eTest, RecordsBatchAndSearch) {
  const uint32_t seed = base::TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  ASSERT_TRUE(client_->CreateCollection({.name = "points", .dimension = 8}).ok());
  std::vector<Record> records = RandomRecords(100, 8, 0, rng);
  ASSERT_EQ(client_->Upsert("points", records, /*sync=*/true).value_or(0), 100u);

  std::vector<Key> keys = {uint64_t{3}, std::string("absent"), uint64_t{99}};
  absl::StatusOr<std::vector<std::optional<Record>>> got = client_->Get("points", keys);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE((*got)[0].has_value());
  EXPECT_EQ((*got)[0]->vector, records[3].vector);
  EXPECT_FALSE((*got)[1].has_value());
  EXPECT_TRUE((*got)[2].has_value());

  // Batch: an upsert and a delete in one round trip.
  std::vector<client::WriteOp> ops(2);
  ops[0].collection = "points";
  ops[0].records = RandomRecords(2, 8, 1000, rng);
  ops[1].kind = client::WriteOp::Kind::kDelete;
  ops[1].collection = "points";
  ops[1].keys = {uint64_t{0}, uint64_t{1}, uint64_t{5000}};
  absl::StatusOr<std::vector<uint64_t>> applied = client_->Batch(ops);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, (std::vector<uint64_t>{2, 2}));
  EXPECT_EQ(client_->DescribeCollection("points")->num_vectors, 100u);
  // A failing operation is named.
  ops[1].collection = "nope";
  absl::Status failed = client_->Batch(ops).status();
  EXPECT_TRUE(absl::IsNotFound(failed));
  EXPECT_NE(failed.message().find("operations[1].delete"), std::string::npos) << failed;

  // Search: the record itself is its own nearest neighbour; a filter keeps only even ids.
  const std::vector<float>& query = records[10].vector;
  absl::StatusOr<std::vector<std::vector<Hit>>> hits = client_->Search("points", query, {.k = 3});
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 1u);
  ASSERT_EQ((*hits)[0].size(), 3u);
  EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{10}));
  Filter odd = Eq("even", false);
  client::SearchCall calls[2] = {{"points", query, {.k = 5, .filter = &odd}},
                                 {"points", records[20].vector, {.k = 1}}};
  absl::StatusOr<std::vector<std::vector<std::vector<Hit>>>> batch = client_->BatchSearch(calls);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 2u);
  for (const Hit& hit : (*batch)[0][0]) EXPECT_EQ(std::get<uint64_t>(hit.key) % 2, 1u);
  EXPECT_EQ((*batch)[1][0][0].key, Key(uint64_t{20}));
  absl::Status bad = client_->Search("points", std::vector<float>(7, 0.f), {.k = 1}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
}

TEST_F(ClientE2eTest, CountScrollDeleteByFilterAndHitsWithAttributes) {
  std::mt19937 rng(7);
  ASSERT_TRUE(client_->CreateCollection({.name = "scan", .dimension = 8}).ok());
  std::vector<Record> records = RandomRecords(300, 8, 0, rng);
  ASSERT_TRUE(client_->Upsert("scan", records, /*sync=*/true).ok());
  const Filter even = Eq("even", true);
  EXPECT_EQ(client_->Count("scan").value_or(0), 300u);
  EXPECT_EQ(client_->Count("scan", &even).value_or(0), 150u);
  std::vector<Key> seen;
  ScrollOptions scroll{.limit = 64, .with_vectors = true};
  do {
    absl::StatusOr<ScrollPage> page = client_->Scroll("scan", &even, scroll);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const Record& r : page->records) {
      seen.push_back(r.key);
      EXPECT_EQ(r.vector, records[std::get<uint64_t>(r.key)].vector);
      EXPECT_EQ(std::get<bool>(r.attributes.at("even")), true);
    }
    scroll.page_token = page->next_page_token;
  } while (!scroll.page_token.empty());
  ASSERT_EQ(seen.size(), 150u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  absl::Status bad = client_->Scroll("scan", nullptr, {.limit = kMaxScrollLimit + 1}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad) && bad.message().find("limit") != bad.message().npos)
      << bad;

  SearchParams params{.k = 2};
  params.with_attributes = true;
  absl::StatusOr<std::vector<std::vector<Hit>>> hits =
      client_->Search("scan", records[10].vector, params);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ((*hits)[0][0].key, Key(uint64_t{10}));
  EXPECT_EQ((*hits)[0][0].attributes, records[10].attributes);

  EXPECT_EQ(client_->DeleteByFilter("scan", &even, {.sync = true}).value_or(0), 150u);
  EXPECT_EQ(client_->Count("scan", &even).value_or(1), 0u);
  EXPECT_EQ(client_->DeleteByFilter("scan", nullptr).value_or(0), 150u);  // everything
  EXPECT_EQ(client_->Count("scan").value_or(1), 0u);
}

TEST_F(ClientE2eTest, IngestStreamsEveryRecordUnderBackPressure) {
  // A 1-byte in-flight budget: two concurrent streams keep asking each other's batches to
  // back off; every record still arrives exactly once.
  client_.reset();
  ASSERT_EQ(shoald_->Terminate(), 0);
  Start({"--ingest-inflight-bytes", "1"});
  const uint32_t seed = base::TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  ASSERT_TRUE(client_->CreateCollection({.name = "bulk", .dimension = 16}).ok());
  std::vector<Record> first = RandomRecords(3000, 16, 0, rng);
  std::vector<Record> second = RandomRecords(3000, 16, 3000, rng);
  absl::StatusOr<client::IngestResult> results[2];
  std::thread other([&] {
    results[1] = client_->Ingest("bulk", second, {.batch_records = 100, .max_in_flight = 4});
  });
  results[0] = client_->Ingest("bulk", first, {.batch_records = 100, .max_in_flight = 4});
  other.join();
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->upserted, 3000u);
    EXPECT_EQ(result->batches, 30u);
  }
  std::cout << "ingest retries asked by the server: " << results[0]->retries << " + "
            << results[1]->retries << "\n";
  EXPECT_EQ(client_->DescribeCollection("bulk")->num_vectors, 6000u);
  // A bad batch ends the stream naming its sequence and field.
  std::vector<Record> bad = RandomRecords(10, 16, 0, rng);
  bad[7].vector.pop_back();
  absl::Status status = client_->Ingest("bulk", bad, {.batch_records = 5}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("batch 1: records[2].vector"), std::string::npos) << status;
}

TEST_F(ClientE2eTest, BuildIndexCompactStatsSnapshotAndRestore) {
  const uint32_t seed = base::TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  ASSERT_TRUE(client_->CreateCollection({.name = "vecs", .dimension = 8}).ok());
  ASSERT_TRUE(client_->CreateAlias("current", "vecs").ok());
  std::vector<Record> records = RandomRecords(600, 8, 0, rng);
  ASSERT_TRUE(client_->Upsert("vecs", records).ok());
  std::vector<client::BuildProgress> reports;
  absl::StatusOr<CollectionInfo> built = client_->BuildIndex(
      "current", "spann:centroid_ratio=0.05,replicas=2,seed=1",
      [&](const client::BuildProgress& p) { reports.push_back(p); }, /*progress_interval_ms=*/10);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->index.rfind("spann", 0), 0u) << built->index;
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().phase, "done");
  EXPECT_EQ(reports.back().fraction, 1.0);
  EXPECT_EQ(reports.front().vectors, 600u);
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_GE(reports[i].fraction, reports[i - 1].fraction) << reports[i].step;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(client_->BuildIndex("vecs", "spann:bogus=1").status()));
  ASSERT_TRUE(client_->Compact("vecs").ok());
  ASSERT_TRUE(client_->Compact().ok());

  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->total_vectors, 600u);
  EXPECT_EQ(stats->total_vector_bytes, 600u * 8 * 4);

  auto answers = [&] { return client_->Search("current", records[42].vector, {.k = 5}); };
  absl::StatusOr<std::vector<std::vector<Hit>>> before = answers();
  ASSERT_TRUE(before.ok()) << before.status();
  SearchStats search_stats;  // the SSD index reports what it read
  ASSERT_TRUE(client_->Search("vecs", records[1].vector, {.k = 5, .stats = &search_stats}).ok());
  EXPECT_GT(search_stats.postings_read, 0u);
  absl::StatusOr<client::SnapshotInfo> snapshot = client_->Snapshot("snap-1");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_GT(snapshot->bytes, 600u * 8 * 4);
  EXPECT_TRUE(absl::IsAlreadyExists(client_->Snapshot("snap-1").status()));
  ASSERT_EQ(client_->ListSnapshots()->size(), 1u);

  // Change everything, then go back.
  ASSERT_TRUE(client_->Upsert("vecs", RandomRecords(50, 8, 10000, rng)).ok());
  ASSERT_TRUE(client_->CreateCollection({.name = "later", .dimension = 2}).ok());
  absl::StatusOr<std::vector<CollectionInfo>> restored = client_->Restore("snap-1");
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_EQ(restored->size(), 1u);
  EXPECT_EQ((*restored)[0].num_vectors, 600u);
  EXPECT_EQ((*restored)[0].aliases, std::vector<std::string>{"current"});
  absl::StatusOr<std::vector<std::vector<Hit>>> after = answers();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);

  // Only names inside --snapshot-dir: never a path.
  for (const char* name : {"../x", "..", "a/b", "/etc", "snap-1/../snap-1", ".hidden"}) {
    absl::Status refused = client_->Restore(name).status();
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << name << ": " << refused;
    EXPECT_NE(refused.message().find("name"), std::string::npos) << refused;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Snapshot("../escape").status()));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(snapshot_dir_) / ".." / "escape"));
  EXPECT_TRUE(absl::IsNotFound(client_->Restore("never-taken").status()));
  // A plain name that is a symbolic link out of --snapshot-dir is refused too.
  const std::string outside = MakeTempDir();
  std::filesystem::copy(snapshot_dir_ + "/snap-1", outside + "/copy",
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directory_symlink(outside + "/copy", snapshot_dir_ + "/linked");
  absl::Status linked = client_->Restore("linked").status();
  EXPECT_TRUE(absl::IsInvalidArgument(linked)) << linked;
  std::filesystem::remove_all(outside);

  // The restored database is what a restart finds.
  client_.reset();
  ASSERT_EQ(shoald_->Terminate(), 0) << shoald_->Stderr();
  Start();
  EXPECT_EQ(client_->DescribeCollection("current")->num_vectors, 600u);
}

}  // namespace
}  // namespace shoal::e2e
