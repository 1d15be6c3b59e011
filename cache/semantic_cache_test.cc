#include "cache/semantic_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "base/test_seed.h"
#include "cache/cache_catalog.h"

namespace shoal::cache {
namespace {

constexpr int64_t kSecond = 1'000'000;

class SemanticCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "semantic_cache_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = storage::RecordStore::Open(dir_, {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    Reopen();
  }
  void TearDown() override {
    catalog_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A fresh catalog over the same rows (what a DB reopen does to the caches).
  void Reopen(bool create = true) {
    cache_.reset();
    catalog_.reset();
    auto catalog = CacheCatalog::Open(store_.get(), &clock_);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
    if (create && catalog_->List().empty()) {
      ASSERT_TRUE(catalog_->Create({.name = "c", .dimension = 2, .metric = Metric::kCosine}).ok());
    }
    auto c = catalog_->Find("c");
    ASSERT_TRUE(c.ok()) << c.status();
    cache_ = *c;
  }
  static CachePolicy Policy(double threshold) {
    return CachePolicy{.threshold = threshold, .target_false_hit_rate = 0};
  }
  static CacheLookupRequest Q(std::vector<float> v, std::string prompt = "",
                              CachePartition p = {.tenant = "t", .model = "m"},
                              std::string category = "") {
    return {.partition = p, .category = category, .embedding = v, .prompt = prompt};
  }
  uint64_t Put(const CacheLookupRequest& q, std::string response) {
    auto id = cache_->Store({.lookup = q, .response = response}, /*sync=*/true);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }
  CacheLookupResult Get(const CacheLookupRequest& q) {
    auto r = cache_->Lookup(q);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(CacheLookupResult{});
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<storage::RecordStore> store_;
  std::unique_ptr<CacheCatalog> catalog_;
  std::shared_ptr<SemanticCache> cache_;
};

TEST_F(SemanticCacheTest, IdenticalPromptsNeverHitAcrossPartitions) {
  ASSERT_TRUE(cache_->SetPolicy("", Policy(0.0)).ok());  // anything in reach would hit
  const CachePartition home{
      .tenant = "a", .model = "m", .params_fingerprint = "p", .context_hash = "h"};
  Put(Q({1, 0}, "what is 2+2", home), "4");
  for (CachePartition other :
       {CachePartition{"b", "m", "p", "h"}, CachePartition{"a", "n", "p", "h"},
        CachePartition{"a", "m", "q", "h"}, CachePartition{"a", "m", "p", "i"},
        CachePartition{"", "", "", ""}}) {
    CacheLookupResult r = Get(Q({1, 0}, "what is 2+2", other));
    EXPECT_FALSE(r.hit) << other.tenant << "/" << other.model;
    EXPECT_TRUE(std::isnan(r.similarity));  // the other partition holds nothing at all
    EXPECT_EQ(r.entry_id, 0u);
  }
  CacheLookupResult same = Get(Q({1, 0}, "  What is   2+2 ", home));
  EXPECT_TRUE(same.hit);
  EXPECT_TRUE(same.exact);
  EXPECT_EQ(same.response, "4");
}

TEST_F(SemanticCacheTest, EntriesExpireExactlyAtTtl) {
  CachePolicy p = Policy(0.9);
  p.ttl_seconds = 60;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  Put(Q({1, 0}, "prompt"), "answer");
  clock_.AdvanceMicros(60 * kSecond - 1);
  EXPECT_TRUE(Get(Q({1, 0}, "prompt")).hit);
  EXPECT_TRUE(Get(Q({1, 0.01f})).hit);
  clock_.AdvanceMicros(1);
  EXPECT_FALSE(Get(Q({1, 0}, "prompt")).hit);
  EXPECT_FALSE(Get(Q({1, 0.01f})).hit);
  auto swept = cache_->Sweep();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 1u);
  EXPECT_EQ(cache_->Stats().total.expirations, 1u);
  EXPECT_EQ(cache_->Stats().total.entries, 0u);
}

TEST_F(SemanticCacheTest, RefreshOnHitRestartsTheTtl) {
  CachePolicy p = Policy(0.9);
  p.ttl_seconds = 10;
  p.refresh_ttl_on_hit = true;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  Put(Q({1, 0}), "a");
  clock_.AdvanceMicros(9 * kSecond);
  EXPECT_TRUE(Get(Q({1, 0})).hit);  // restarts at t = 9 s
  clock_.AdvanceMicros(10 * kSecond - 1);
  EXPECT_TRUE(Get(Q({1, 0})).hit);  // t = 19 s - 1 us; restarts again
  clock_.AdvanceMicros(10 * kSecond);
  EXPECT_FALSE(Get(Q({1, 0})).hit);
}

TEST_F(SemanticCacheTest, QuotaEvictsOnlyItsOwnCategory) {
  CachePolicy small = Policy(0.99);
  small.max_entries = 3;
  small.eviction = CacheEviction::kFifo;
  ASSERT_TRUE(cache_->SetPolicy("code", small).ok());
  ASSERT_TRUE(cache_->SetPolicy("chat", Policy(0.99)).ok());
  std::vector<uint64_t> code, chat;
  for (int i = 0; i < 6; ++i) {
    const float a = 0.2f * static_cast<float>(i);
    code.push_back(Put(Q({std::cos(a), std::sin(a)}, "", {}, "code"), "c" + std::to_string(i)));
    chat.push_back(Put(Q({std::cos(a), std::sin(a)}, "", {}, "chat"), "h" + std::to_string(i)));
  }
  CacheStats s = cache_->Stats();
  ASSERT_EQ(s.categories.size(), 2u);  // by name: chat, code
  const CacheCounters& chat_c = s.categories[0].counters;
  const CacheCounters& code_c = s.categories[1].counters;
  EXPECT_EQ(chat_c.entries, 6u);
  EXPECT_EQ(chat_c.evicted_by_entries, 0u);
  EXPECT_EQ(code_c.entries, 3u);
  EXPECT_EQ(code_c.evicted_by_entries, 3u);
  // FIFO: the three oldest code entries went; every chat entry still answers.
  for (int i = 0; i < 6; ++i) {
    const float a = 0.2f * static_cast<float>(i);
    CacheLookupResult r = Get(Q({std::cos(a), std::sin(a)}, "", {}, "code"));
    EXPECT_EQ(r.hit, i >= 3) << i;
    EXPECT_TRUE(Get(Q({std::cos(a), std::sin(a)}, "", {}, "chat")).hit) << i;
  }
}

TEST_F(SemanticCacheTest, LruAndLfuPickTheirVictims) {
  for (CacheEviction ev : {CacheEviction::kLru, CacheEviction::kLfu}) {
    const std::string cat = CacheEvictionName(ev);
    CachePolicy p = Policy(0.99);
    p.max_entries = 2;
    p.eviction = ev;
    ASSERT_TRUE(cache_->SetPolicy(cat, p).ok());
    Put(Q({1, 0}, "", {}, cat), "first");
    Put(Q({0, 1}, "", {}, cat), "second");
    EXPECT_TRUE(Get(Q({1, 0}, "", {}, cat)).hit);  // LRU: first is now the most recent
    EXPECT_TRUE(Get(Q({1, 0}, "", {}, cat)).hit);  // LFU: first has 2 hits, second 0
    Put(Q({-1, 0}, "", {}, cat), "third");
    EXPECT_TRUE(Get(Q({1, 0}, "", {}, cat)).hit) << cat;
    EXPECT_FALSE(Get(Q({0, 1}, "", {}, cat)).hit) << cat;
    EXPECT_TRUE(Get(Q({-1, 0}, "", {}, cat)).hit) << cat;
  }
}

// Hits only stamp their entry (lazy LRU/LFU); eviction must still pick exactly a reference
// model's victim: random stores and hits against max_entries 5, every step checked.
TEST_F(SemanticCacheTest, LazyHitStampsEvictLikeAReferenceModel) {
  for (CacheEviction ev : {CacheEviction::kLru, CacheEviction::kLfu}) {
    const std::string cat = CacheEvictionName(ev);
    CachePolicy p = Policy(0.9999);
    p.max_entries = 5;
    p.eviction = ev;
    ASSERT_TRUE(cache_->SetPolicy(cat, p).ok());
    auto at = [](int i) {  // distinct directions: cos(0.05) < 0.9999
      return std::vector<float>{std::cos(0.05f * i), std::sin(0.05f * i)};
    };
    // Reference: entry index -> (order key, id); the smallest goes first.
    std::map<int, std::pair<uint64_t, uint64_t>> live;
    std::map<int, uint64_t> hits;
    std::mt19937_64 rng(base::TestSeed());
    uint64_t tick = 0;
    for (int step = 0, next = 0; step < 300; ++step) {
      if (live.empty() || rng() % 3 == 0) {
        if (live.size() == 5) {
          auto victim = std::min_element(live.begin(), live.end(),
                                         [](auto& a, auto& b) { return a.second < b.second; });
          live.erase(victim);
        }
        const int i = next++;
        auto id = cache_->Store({.lookup = Q(at(i), "", {}, cat), .response = std::to_string(i)},
                                /*sync=*/false);
        ASSERT_TRUE(id.ok()) << id.status();
        hits[i] = 0;
        live[i] = {ev == CacheEviction::kLru ? ++tick : 0, *id};
      } else {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        const CacheLookupResult r = Get(Q(at(it->first), "", {}, cat));
        ASSERT_TRUE(r.hit) << cat << " step " << step << " entry " << it->first;
        ASSERT_EQ(r.response, std::to_string(it->first));
        it->second.first = ev == CacheEviction::kLru ? ++tick : ++hits[it->first];
      }
    }
  }
}

TEST_F(SemanticCacheTest, ByteQuotaEvictsAndRejectsOversizedEntries) {
  CachePolicy p = Policy(0.99);
  p.max_bytes = 2 * (2 * sizeof(float) + 100 + 64);  // two entries of 100-byte responses
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  Put(Q({1, 0}), std::string(100, 'a'));
  Put(Q({0, 1}), std::string(100, 'b'));
  Put(Q({-1, 0}), std::string(100, 'c'));
  EXPECT_EQ(cache_->Stats().total.evicted_by_bytes, 1u);
  EXPECT_EQ(cache_->Stats().total.entries, 2u);
  auto too_big = cache_->Store({.lookup = Q({1, 1}), .response = std::string(1000, 'x')}, true);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("max_bytes"), std::string::npos);
}

TEST_F(SemanticCacheTest, ThresholdIsInclusiveToTheLastFloat) {
  // (3, 4) normalises to exactly (0.6f, 0.8f): the similarity to (1, 0) is exactly 0.6f.
  Put(Q({3, 4}), "x");
  const float at = 0.6f;
  const float above = std::nextafter(at, 1.0f);
  const float below = std::nextafter(at, 0.0f);
  for (auto [threshold, hit] : {std::pair{at, true}, {above, false}, {below, true}}) {
    ASSERT_TRUE(cache_->SetPolicy("", Policy(threshold)).ok());
    CacheLookupResult r = Get(Q({1, 0}));
    EXPECT_EQ(r.hit, hit) << threshold;
    EXPECT_EQ(static_cast<float>(r.similarity), at);
    EXPECT_EQ(static_cast<float>(r.threshold), threshold);
  }
}

// A question and its negation: embeddings at cosine ~0.97, different answers.
TEST_F(SemanticCacheTest, NegationMissesUnderStrictPolicyAndIsLearnedUnderLooseOne) {
  const float a = std::acos(0.97f);
  const std::vector<float> enable = {1, 0}, disable = {std::cos(a), std::sin(a)};
  ASSERT_TRUE(cache_->SetPolicy("strict", Policy(0.98)).ok());
  Put(Q(enable, "", {}, "strict"), "run enable()");
  CacheLookupResult r = Get(Q(disable, "", {}, "strict"));
  EXPECT_FALSE(r.hit);
  EXPECT_NEAR(r.similarity, 0.97, 1e-5);

  CachePolicy loose = Policy(0.9);
  loose.target_false_hit_rate = 0.02;  // learning on
  ASSERT_TRUE(cache_->SetPolicy("loose", loose).ok());
  Put(Q(enable, "", {}, "loose"), "run enable()");
  EXPECT_TRUE(Get(Q(disable, "", {}, "loose")).hit);  // the false hit a loose policy makes
  // The negation's own answer is stored: each entry learns the other is not its paraphrase.
  Put(Q(disable, "", {}, "loose"), "run disable()");
  const float b = std::acos(0.99f);
  CacheLookupResult near_disable = Get(Q({std::cos(a + b), std::sin(a + b)}, "", {}, "loose"));
  EXPECT_TRUE(near_disable.hit);
  EXPECT_EQ(near_disable.response, "run disable()");
  // Halfway between them (cos ~0.992 to each): both have learned a floor of ~0.97, so the
  // nearer one still answers; a query no closer than the pair itself does not.
  CacheLookupResult far = Get(Q({std::cos(-a * 0.01f), std::sin(-a * 0.01f)}, "", {}, "loose"));
  EXPECT_TRUE(far.hit);
  EXPECT_EQ(far.response, "run enable()");
  EXPECT_GT(far.threshold, 0.97);
}

TEST_F(SemanticCacheTest, WrongFeedbackRaisesTheEntryThreshold) {
  ASSERT_TRUE(cache_->SetPolicy("", Policy(0.8)).ok());
  const uint64_t id = Put(Q({1, 0}), "a");
  const float a = std::acos(0.9f);
  CacheLookupResult r = Get(Q({std::cos(a), std::sin(a)}));
  ASSERT_TRUE(r.hit);
  ASSERT_TRUE(cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kWrong}).ok());
  EXPECT_FALSE(Get(Q({std::cos(a), std::sin(a)})).hit);
  EXPECT_TRUE(Get(Q({std::cos(a / 2), std::sin(a / 2)})).hit);
  EXPECT_EQ(cache_->Stats().total.false_hit_reports, 1u);
  EXPECT_EQ(cache_->Feedback({.entry_id = 999}).code(), absl::StatusCode::kNotFound);
}

TEST_F(SemanticCacheTest, WrongExactHitRemovesTheEntry) {
  const uint64_t id = Put(Q({1, 0}, "price of gold"), "1900");
  CacheLookupResult r = Get(Q({1, 0}, "price of gold"));
  ASSERT_TRUE(r.exact);
  ASSERT_TRUE(cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kWrong}).ok());
  EXPECT_FALSE(Get(Q({1, 0}, "price of gold")).hit);
  EXPECT_EQ(cache_->Stats().total.entries, 0u);
}

// A wrong exact hit shows the answer changed: the same answer stored under a paraphrase near
// it goes too; another answer near it, and the same answer out of reach, stay.
TEST_F(SemanticCacheTest, WrongExactHitRemovesTheSameAnswerNearIt) {
  ASSERT_TRUE(cache_->SetPolicy("", Policy(0.8)).ok());
  const float a = std::acos(0.95f), b = std::acos(0.9f);
  const uint64_t id = Put(Q({1, 0}, "price of gold"), "1900");
  Put(Q({std::cos(a), std::sin(a)}, "gold price"), "1900");        // a stale copy
  Put(Q({std::cos(b), -std::sin(b)}, "gold quote"), "1850");       // another answer: stays
  Put(Q({std::cos(2.0f), std::sin(2.0f)}, "year of it"), "1900");  // out of reach: stays
  ASSERT_TRUE(Get(Q({1, 0}, "price of gold")).exact);
  ASSERT_TRUE(cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kWrong}).ok());
  EXPECT_FALSE(Get(Q({std::cos(a), std::sin(a)}, "gold price")).hit);
  EXPECT_EQ(Get(Q({std::cos(b), -std::sin(b)}, "gold quote")).response, "1850");
  EXPECT_EQ(Get(Q({std::cos(2.0f), std::sin(2.0f)}, "year of it")).response, "1900");
  EXPECT_EQ(cache_->Stats().total.entries, 2u);
  EXPECT_EQ(cache_->Stats().total.invalidated, 2u);
}

TEST_F(SemanticCacheTest, LoadBandStaysInsideItsLimits) {
  CachePolicy p = Policy(0.9);
  p.min_threshold = 0.8;
  p.ttl_seconds = 100;
  p.max_ttl_seconds = 200;
  p.load_high = 0.5;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  Put(Q({1, 0}, "", {.model = "m"}), "x");
  const float a = std::acos(0.85f);  // between the limits: hits only under load
  for (int i = 0; i <= 20; ++i) {
    const double load = i / 20.0;
    ASSERT_TRUE(catalog_->ReportModelLoad("m", load).ok());
    CacheLookupResult r = Get(Q({std::cos(a), std::sin(a)}, "", {.model = "m"}));
    EXPECT_GE(r.threshold, 0.8f - 1e-7) << load;
    EXPECT_LE(r.threshold, 0.9f + 1e-7) << load;
    if (load <= 0.5) {
      EXPECT_EQ(static_cast<float>(r.threshold), 0.9f) << load;
    }
  }
  EXPECT_EQ(static_cast<float>(Get(Q({1, 0}, "", {.model = "m"})).threshold), 0.8f);
  EXPECT_TRUE(Get(Q({std::cos(a), std::sin(a)}, "", {.model = "m"})).hit);
  // TTL: 150 s is past 100 but inside 200: served only while the model is overloaded.
  clock_.AdvanceMicros(150 * kSecond);
  EXPECT_TRUE(Get(Q({1, 0}, "", {.model = "m"})).hit);
  ASSERT_TRUE(catalog_->ReportModelLoad("m", 0.2).ok());
  EXPECT_FALSE(Get(Q({1, 0}, "", {.model = "m"})).hit);
  ASSERT_TRUE(catalog_->ReportModelLoad("m", 1.0).ok());
  clock_.AdvanceMicros(50 * kSecond);  // 200 s: past the hard limit
  EXPECT_FALSE(Get(Q({1, 0}, "", {.model = "m"})).hit);
  EXPECT_FALSE(catalog_->ReportModelLoad("m", 1.5).ok());
}

// The band under load spends delta + 1 point: a would-be false hit observed inside the band
// (a store whose neighbour there answers differently) shrinks the share; an identical prompt
// answered differently rules out the TTL half.
TEST_F(SemanticCacheTest, OverloadBandSpendsOnlyTheFalseHitBudget) {
  CachePolicy p = Policy(0.9);
  p.target_false_hit_rate = 0.02;
  p.min_threshold = 0.7;
  p.ttl_seconds = 100;
  p.max_ttl_seconds = 200;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  const CachePartition m{.model = "m"};
  const uint64_t id = Put(Q({1, 0}, "", m), "a");
  for (int i = 0; i < 20; ++i) {  // 20 lookups, all hits judged right: r = 0
    ASSERT_TRUE(Get(Q({1, 0}, "", m)).hit);
    ASSERT_TRUE(cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kCorrect}).ok());
  }
  EXPECT_DOUBLE_EQ(cache_->Stats().categories[0].band_share, 1.0);
  // Another answer at 0.8: inside [0.7, 0.9). e = 1 / 20 lookups, budget 0.03: g = 0.6.
  const float a = std::acos(0.8f);
  Put(Q({std::cos(a), std::sin(a)}, "", m), "b");
  EXPECT_NEAR(cache_->Stats().categories[0].band_share, 0.6, 1e-9);
  ASSERT_TRUE(catalog_->ReportModelLoad("m", 1.0).ok());
  // The category's threshold under full load, seen from a partition with no entry (an entry's
  // own learned floor would lift it).
  CacheLookupResult r = Get(Q({0, 1}, "", {.tenant = "u", .model = "m"}));
  EXPECT_NEAR(r.threshold, 0.9 - 0.6 * 0.2, 1e-6);
  EXPECT_NEAR(cache_->Stats().categories[0].band_share, 0.63, 1e-9);  // 21 lookups now
  // The TTL half: 150 s is inside the band's 200 s while no answer changed...
  ASSERT_TRUE(catalog_->ReportModelLoad("m", 0).ok());
  Put(Q({0, 1}, "price", m), "1900");
  clock_.AdvanceMicros(150 * kSecond);
  ASSERT_TRUE(catalog_->ReportModelLoad("m", 1.0).ok());
  EXPECT_TRUE(Get(Q({0, 1}, "price", m)).hit);
  // ... and not once the same prompt was answered differently.
  Put(Q({0, 1}, "price", m), "1950");
  clock_.AdvanceMicros(150 * kSecond);
  EXPECT_FALSE(Get(Q({0, 1}, "price", m)).hit);
}

TEST_F(SemanticCacheTest, LearnedOffsetNeverPassesMaxThreshold) {
  CachePolicy p = Policy(0.8);
  p.target_false_hit_rate = 0.02;
  p.max_threshold = 0.85;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  const uint64_t id = Put(Q({1, 0}), "x");
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(
        cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kWrong, .similarity = 0.849})
            .ok());
  }
  CacheStats s = cache_->Stats();
  EXPECT_NEAR(s.categories[0].threshold_offset, 0.05, 1e-9);
  EXPECT_EQ(static_cast<float>(Get(Q({0.6f, 0.8f})).threshold), 0.85f);
}

// An answer reported stale at 250 s (the only hit so far) teaches a TTL under 250 s (the
// configured one is 300 s): an entry older than it misses, a younger one hits, and the TTL
// survives a reopen.
TEST_F(SemanticCacheTest, EntriesOlderThanTheLearnedTtlMiss) {
  CachePolicy p = Policy(0.9);
  p.ttl_seconds = 300;
  p.target_false_hit_rate = 0.02;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  const uint64_t id = Put(Q({1, 0}, "price"), "old");
  clock_.AdvanceMicros(250 * kSecond);
  ASSERT_TRUE(Get(Q({1, 0}, "price")).exact);
  ASSERT_TRUE(cache_->Feedback({.entry_id = id, .verdict = CacheVerdict::kWrong}).ok());
  const double learned = cache_->Stats().categories[0].learned_ttl_seconds;
  EXPECT_LE(learned, 250);
  EXPECT_GT(learned, 250 / kAgeRatio);
  for (bool reopen : {false, true}) {
    if (reopen) Reopen();
    EXPECT_DOUBLE_EQ(cache_->Stats().categories[0].learned_ttl_seconds, learned);
    const std::string prompt = reopen ? "after" : "before";
    Put(Q({0, 1}, prompt), "fresh");
    clock_.AdvanceMicros(static_cast<int64_t>(learned * kSecond) - 1);
    EXPECT_TRUE(Get(Q({0, 1}, prompt)).hit);
    clock_.AdvanceMicros(1);
    EXPECT_FALSE(Get(Q({0, 1}, prompt)).hit);  // 300 s configured, but stale by experience
  }
}

TEST_F(SemanticCacheTest, ReopenKeepsEntriesPoliciesAndDropsExpired) {
  CachePolicy p = Policy(0.95);
  p.ttl_seconds = 30;
  ASSERT_TRUE(cache_->SetPolicy("short", p).ok());
  Put(Q({1, 0}, "kept"), "forever");
  Put(Q({0, 1}, "gone", {}, "short"), "soon stale");
  Reopen();
  EXPECT_EQ(cache_->GetPolicy("short").ttl_seconds, 30);
  EXPECT_TRUE(Get(Q({0, 1}, "gone", {}, "short")).hit);
  clock_.AdvanceMicros(30 * kSecond);
  Reopen();
  EXPECT_EQ(Get(Q({1, 0}, "kept")).response, "forever");
  EXPECT_FALSE(Get(Q({0, 1}, "gone", {}, "short")).hit);
  EXPECT_EQ(cache_->Info().entries, 1u);
  const uint64_t next = Put(Q({1, 1}), "new");
  EXPECT_EQ(next, 3u);  // ids are never reused
}

TEST_F(SemanticCacheTest, InvalidateDryRunCountsThenRemoves) {
  Put(Q({1, 0}, "", {.tenant = "a"}, "x"), "1");
  Put(Q({0, 1}, "", {.tenant = "a"}, "y"), "2");
  clock_.AdvanceMicros(10 * kSecond);
  Put(Q({1, 0}, "", {.tenant = "b"}, "x"), "3");
  auto n = cache_->Invalidate({.tenant = "a", .dry_run = true});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(*cache_->Invalidate({.category = "x", .dry_run = true}), 2u);
  EXPECT_EQ(*cache_->Invalidate({.older_than_seconds = 5, .dry_run = true}), 2u);
  EXPECT_EQ(cache_->Info().entries, 3u);
  EXPECT_EQ(*cache_->Invalidate({.category = "x", .older_than_seconds = 5, .dry_run = false}), 1u);
  EXPECT_EQ(cache_->Info().entries, 2u);
  EXPECT_FALSE(Get(Q({1, 0}, "", {.tenant = "a"}, "x")).hit);
  EXPECT_TRUE(Get(Q({1, 0}, "", {.tenant = "b"}, "x")).hit);
}

TEST_F(SemanticCacheTest, DisabledCategoryNeitherStoresNorServes) {
  CachePolicy off = Policy(0.5);
  off.enabled = false;
  ASSERT_TRUE(cache_->SetPolicy("medical", off).ok());
  auto id = cache_->Store({.lookup = Q({1, 0}, "", {}, "medical"), .response = "x"}, true);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 0u);
  CacheLookupResult r = Get(Q({1, 0}, "", {}, "medical"));
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.disabled);
}

TEST_F(SemanticCacheTest, BadRequestsNameTheField) {
  auto code_and = [](const absl::Status& s, std::string field) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(field), std::string::npos) << s;
  };
  code_and(cache_->Lookup(Q({1, 0, 0})).status(), "embedding");
  code_and(cache_->Lookup(Q({NAN, 0})).status(), "embedding[0]");
  code_and(cache_->Lookup(Q({0, 0})).status(), "embedding");
  code_and(cache_->Lookup(Q({1, 0}, "   ")).status(), "prompt");
  code_and(cache_->Lookup(Q({1, 0}, "", {}, "9lives")).status(), "category");
  code_and(cache_->Lookup(Q({1, 0}, "", {.tenant = std::string(300, 't')})).status(),
           "partition.tenant");
  code_and(cache_->Store({.lookup = Q({1, 0, 0})}, true).status(), "lookup.embedding");
  code_and(cache_->SetPolicy("", Policy(1.5)), "policy.threshold");
  CachePolicy band = Policy(0.8);
  band.min_threshold = 0.9;
  code_and(cache_->SetPolicy("", band), "policy.min_threshold");
  CachePolicy ttl = Policy(0.8);
  ttl.ttl_seconds = 10;
  ttl.max_ttl_seconds = 5;
  code_and(cache_->SetPolicy("", ttl), "policy.max_ttl_seconds");
  code_and(catalog_->Create({.name = "9x", .dimension = 2}), "spec.name");
  code_and(catalog_->Create({.name = "x", .dimension = 0}), "spec.dimension");
  EXPECT_EQ(catalog_->Create({.name = "c", .dimension = 2}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog_->Find("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SemanticCacheTest, DroppedCacheLeavesNoRows) {
  Put(Q({1, 0}, "p"), "x");
  ASSERT_TRUE(catalog_->Drop("c").ok());
  EXPECT_EQ(cache_->Lookup(Q({1, 0})).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(catalog_->Create({.name = "c", .dimension = 2}).ok());
  Reopen(/*create=*/false);
  EXPECT_FALSE(Get(Q({1, 0}, "p")).hit);
  EXPECT_EQ(cache_->Info().entries, 0u);
}

// A reference model (a list of entries, brute-force similarity) agrees with every lookup and
// with the final counters, over random stores, lookups and time steps.
TEST_F(SemanticCacheTest, CountersAgreeWithAReferenceModel) {
  std::mt19937 rng(base::TestSeed());
  struct Ref {
    CachePartition partition;
    std::string category, hash, response;
    std::vector<float> v;
    int64_t start;
  };
  std::map<uint64_t, Ref> ref;
  CachePolicy p = Policy(0.9);
  p.ttl_seconds = 50;
  ASSERT_TRUE(cache_->SetPolicy("", p).ok());
  const std::vector<CachePartition> parts = {{.tenant = "a"}, {.tenant = "b"}, {.model = "x"}};
  std::uniform_real_distribution<float> u(-1, 1);
  uint64_t hits = 0, misses = 0, exact = 0;
  for (int step = 0; step < 2000; ++step) {
    const CachePartition& part = parts[rng() % parts.size()];
    const std::string cat = rng() % 2 ? "k" : "";
    const std::string prompt = "p" + std::to_string(rng() % 40);
    std::vector<float> v = {u(rng), u(rng)};
    if (std::hypot(v[0], v[1]) < 0.1f) v = {1, 0};
    const float norm = std::sqrt(v[0] * v[0] + v[1] * v[1]);
    std::vector<float> nv = {v[0] / norm, v[1] / norm};
    clock_.AdvanceMicros(rng() % (2 * kSecond));
    const int64_t now = clock_.NowMicros();
    if (rng() % 3 == 0) {
      const uint64_t id = Put(Q(v, prompt, part, cat), "r" + std::to_string(step));
      for (auto it = ref.begin(); it != ref.end();) {
        const bool replaced = it->second.partition == part && it->second.category == cat &&
                              it->second.hash == CachePromptHash(prompt);
        it = replaced || now >= it->second.start + 50 * kSecond ? ref.erase(it) : std::next(it);
      }
      ref[id] = {part, cat, CachePromptHash(prompt), "r" + std::to_string(step), nv, now};
      continue;
    }
    const bool with_prompt = rng() % 2;
    CacheLookupResult r = Get(Q(v, with_prompt ? prompt : "", part, cat));
    uint64_t want = 0;
    bool want_exact = false;
    float best = -2;
    for (const auto& [id, e] : ref) {
      if (!(e.partition == part) || e.category != cat || now >= e.start + 50 * kSecond) continue;
      if (with_prompt && e.hash == CachePromptHash(prompt)) {
        want = id;
        want_exact = true;
        break;
      }
      const float sim = e.v[0] * nv[0] + e.v[1] * nv[1];
      if (sim > best) best = sim, want = id;
    }
    const bool want_hit = want_exact || (want != 0 && best >= 0.9f);
    ASSERT_EQ(r.hit, want_hit) << "step " << step << " sim " << best;
    if (want_hit) {
      ASSERT_EQ(r.response, ref[want].response) << "step " << step;
    }
    (want_hit ? hits : misses)++;
    exact += want_exact;
  }
  const CacheCounters t = cache_->Stats().total;
  EXPECT_EQ(t.hits, hits);
  EXPECT_EQ(t.misses, misses);
  EXPECT_EQ(t.exact_hits, exact);
  EXPECT_EQ(t.lookups, hits + misses);
}

// Shards past ShardIndex's cluster_at (4096) are searched through the clustered index.
class ClusteredCacheTest : public SemanticCacheTest {
 protected:
  static constexpr size_t kDim = 16;
  static constexpr size_t kEntries = 4500;
  void OpenBig() {
    auto c = catalog_->Find("big");
    if (!c.ok()) {
      ASSERT_TRUE(catalog_->Create({.name = "big", .dimension = kDim}).ok());
      c = catalog_->Find("big");
    }
    ASSERT_TRUE(c.ok()) << c.status();
    big_ = *c;
  }
  // kEntries unit vectors around 64 centres.
  static std::vector<std::vector<float>> Vectors(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<std::vector<float>> centres(64, std::vector<float>(kDim));
    for (auto& c : centres) {
      for (float& x : c) x = normal(rng);
    }
    std::vector<std::vector<float>> out(kEntries, std::vector<float>(kDim));
    for (auto& v : out) {
      const auto& c = centres[rng() % centres.size()];
      double n = 0;
      for (size_t j = 0; j < kDim; ++j) v[j] = c[j] + 0.3f * normal(rng), n += v[j] * v[j];
      for (float& x : v) x /= static_cast<float>(std::sqrt(n));
    }
    return out;
  }
  void StoreAll(const std::vector<std::vector<float>>& v, const CachePartition& p,
                const std::string& category, const std::string& tag) {
    for (size_t i = 0; i < v.size(); ++i) {
      auto id =
          big_->Store({.lookup = Q(v[i], "", p, category), .response = tag + std::to_string(i)},
                      /*sync=*/false);
      ASSERT_TRUE(id.ok()) << id.status();
    }
  }
  CacheLookupResult GetBig(const CacheLookupRequest& q) {
    auto r = big_->Lookup(q);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(CacheLookupResult{});
  }
  std::shared_ptr<SemanticCache> big_;
};

TEST_F(ClusteredCacheTest, NeverCrossesPartitionsAndFindsEveryEntryAfterReopen) {
  OpenBig();
  ASSERT_TRUE(big_->SetPolicy("", Policy(0.999)).ok());
  const auto v = Vectors(base::TestSeed());
  const CachePartition a{.tenant = "a", .model = "m"}, b{.tenant = "b", .model = "m"};
  StoreAll(v, a, "", "a");
  StoreAll(v, b, "", "b");
  for (int round = 0; round < 2; ++round) {
    // Before the background index builds land (lookups scan exactly after a reopen, or search
    // an earlier clustering) and after.
    for (bool built : {false, true}) {
      if (built) {
        ASSERT_TRUE(big_->WaitForIndexBuilds().ok());
        EXPECT_EQ(big_->Info().index_builds, 0u);
      }
      for (size_t i = 0; i < kEntries; i += 13) {
        for (const auto& [p, tag] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
          const CacheLookupResult r = GetBig(Q(v[i], "", p));
          ASSERT_TRUE(r.hit) << "round " << round << " built " << built << " entry " << i << " sim "
                             << r.similarity;
          // Duplicated vectors within a partition may answer for each other, never across.
          EXPECT_EQ(r.response.substr(0, 1), tag);
          EXPECT_NEAR(r.similarity, 1.0, 1e-5);
        }
      }
      EXPECT_TRUE(std::isnan(GetBig(Q(v[0], "", {.tenant = "c", .model = "m"})).similarity));
    }
    Reopen();  // every shard's clustered index is rebuilt from the rows in the background
    OpenBig();
  }
}

TEST_F(ClusteredCacheTest, ExpiredCandidatesFallBackToTheNearestServedEntry) {
  OpenBig();
  CachePolicy p = Policy(0.999);
  p.ttl_seconds = 30;
  p.max_ttl_seconds = 60;  // swept only after 60 s
  ASSERT_TRUE(big_->SetPolicy("", p).ok());
  const auto v = Vectors(base::TestSeed());
  StoreAll(v, {}, "", "old");
  ASSERT_TRUE(
      big_->WaitForIndexBuilds().ok());  // the clustered path's candidates, all expired below
  clock_.AdvanceMicros(20 * kSecond);
  std::vector<float> fresh(kDim, 0.0f);
  fresh[0] = 1;
  auto id = big_->Store({.lookup = Q(fresh, "", {}), .response = "fresh"}, /*sync=*/false);
  ASSERT_TRUE(id.ok()) << id.status();
  clock_.AdvanceMicros(15 * kSecond);  // every old entry is past its TTL, none swept yet
  const CacheLookupResult r = GetBig(Q(v[5], "", {}));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.entry_id, *id);
  EXPECT_NEAR(r.similarity, v[5][0], 1e-5);  // the exact similarity to the one served entry
}

}  // namespace
}  // namespace shoal::cache
