// Simulated power losses (FaultInjectingFileSystem: every file back to its last fsync) in the
// middle of random upserts, updates, deletes and index builds, some synced and some not. After
// each loss the reopened database must hold every write acknowledged before the last synced one
// (a synced write makes the WAL before it durable too), plus some prefix of the unsynced writes
// after it — nothing out of order — and Verify must be clean. Seeds are printed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>

#include "base/test_seed.h"
#include "db/db_impl.h"
#include "shoal/db.h"
#include "storage/io/fault_injection.h"

namespace shoal {
namespace {

constexpr uint32_t kDim = 8;
constexpr uint64_t kKeys = 200;
constexpr int kCycles = 12;

using State = std::map<uint64_t, uint64_t>;  // key -> version of its vector (absent: none)

Record R(uint64_t key, uint64_t version) {
  Record r;
  r.key = key;
  for (uint32_t i = 0; i < kDim; ++i) {
    r.vector.push_back(static_cast<float>((key * 131 + version * 17 + i * 7) % 211));
  }
  r.attributes["version"] = static_cast<int64_t>(version);
  return r;
}

// One acknowledged write: keys set to `version`, or deleted when !put.
struct Op {
  bool put = false;
  uint64_t version = 0;
  std::vector<uint64_t> keys;
  void ApplyTo(State* s) const {
    for (uint64_t k : keys) {
      if (put) {
        (*s)[k] = version;
      } else {
        s->erase(k);
      }
    }
  }
};

State Read(DB& db) {
  std::vector<Key> keys;
  for (uint64_t k = 0; k < kKeys; ++k) keys.push_back(k);
  auto got = db.Get("c", keys);
  EXPECT_TRUE(got.ok()) << got.status();
  State s;
  for (uint64_t k = 0; got.ok() && k < kKeys; ++k) {
    const auto& r = (*got)[k];
    if (!r) continue;
    const uint64_t v = std::get<int64_t>(r->attributes.at("version"));
    EXPECT_EQ(r->vector, R(k, v).vector) << "key " << k;
    s[k] = v;
  }
  return s;
}

TEST(PowerLossTest, RandomCyclesKeepEverySyncedWriteAndAPrefixOfTheRest) {
  std::string tmpl = ::testing::TempDir() + "power_loss_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  std::mt19937_64 rng(base::TestSeed());
  storage::FaultInjectingFileSystem fs;
  Options options;
  options.build_threads = 1;
  options.search_threads = 1;
  State durable;  // the state as of the last synced write
  uint64_t version = 0, lost_total = 0, kept_total = 0, builds = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::vector<Op> unsynced;  // acknowledged after the last synced write, in order
    {
      auto db = db::DBImpl::Open(dir, options, {&fs, fs.rocksdb_env()});
      ASSERT_TRUE(db.ok()) << db.status();
      if (cycle == 0) {
        ASSERT_TRUE((*db)->CreateCollection({"c", kDim, Metric::kL2}).ok());
      }
      State state = durable;
      const int ops = 40 + static_cast<int>(rng() % 120);
      for (int i = 0; i < ops; ++i) {
        const int dice = static_cast<int>(rng() % 100);
        if (dice < 3 && !state.empty()) {
          ASSERT_TRUE((*db)->BuildIndex("c", "spann:centroid_ratio=0.05,replicas=2").ok());
          ++builds;
          durable = state;  // its commit is a synced write
          unsynced.clear();
          continue;
        }
        Op op{dice < 65, ++version, {}};
        for (uint64_t n = 1 + rng() % 3; op.keys.size() < n;) {
          const uint64_t k = rng() % kKeys;
          if (std::find(op.keys.begin(), op.keys.end(), k) == op.keys.end()) op.keys.push_back(k);
        }
        const bool sync = rng() % 4 == 0;
        absl::Status s;
        if (op.put) {
          std::vector<Record> batch;
          for (uint64_t k : op.keys) batch.push_back(R(k, op.version));
          s = (*db)->Upsert("c", batch, {.sync = sync});
        } else {
          std::vector<Key> keys(op.keys.begin(), op.keys.end());
          s = (*db)->Delete("c", keys, {.sync = sync}).status();
        }
        ASSERT_TRUE(s.ok()) << s;
        op.ApplyTo(&state);
        if (sync) {  // also a delete that found nothing: it syncs what came before
          durable = state;
          unsynced.clear();
        } else {
          unsynced.push_back(op);
        }
      }
      fs.PowerOff();  // the machine dies with the DB open
    }
    ASSERT_TRUE(fs.DropUnsyncedData().ok());
    auto db = DB::Open(dir, options);
    ASSERT_TRUE(db.ok()) << "cycle " << cycle << ": " << db.status();
    const State found = Read(**db);
    State expect = durable;
    size_t prefix = 0;
    while (expect != found && prefix < unsynced.size()) unsynced[prefix++].ApplyTo(&expect);
    ASSERT_EQ(expect, found) << "cycle " << cycle << ": not the synced state plus a prefix of the "
                             << unsynced.size() << " unsynced writes after it";
    kept_total += prefix;
    lost_total += unsynced.size() - prefix;
    VerifyReport report;
    absl::Status s = (*db)->Verify("", &report);
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s;
    durable = found;
  }
  std::printf("%d power losses, %lu index builds, unsynced writes kept %lu / lost %lu\n", kCycles,
              static_cast<unsigned long>(builds), static_cast<unsigned long>(kept_total),
              static_cast<unsigned long>(lost_total));
  std::filesystem::remove_all(dir);
}

// A synced call that changes nothing (it deletes absent keys, or a filter matches nothing)
// still makes the unsynced writes acknowledged before it durable, as a synced write does.
TEST(PowerLossTest, ASyncedCallThatChangesNothingMakesEarlierWritesDurable) {
  std::string tmpl = ::testing::TempDir() + "power_loss_noop_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  storage::FaultInjectingFileSystem fs;
  const Filter nothing = Eq("version", int64_t{-1});
  const std::vector<std::function<absl::Status(DB&)>> no_ops = {
      [](DB& db) {
        return db.Delete("c", std::vector<Key>{Key(uint64_t{999})}, {.sync = true}).status();
      },
      [&](DB& db) { return db.DeleteByFilter("c", &nothing, {.sync = true}).status(); },
  };
  for (size_t i = 0; i < no_ops.size(); ++i) {
    {
      auto db = db::DBImpl::Open(dir, Options(), {&fs, fs.rocksdb_env()});
      ASSERT_TRUE(db.ok()) << db.status();
      if (i == 0) {
        ASSERT_TRUE((*db)->CreateCollection({"c", kDim, Metric::kL2}).ok());
      }
      const std::vector<Record> one = {R(i, i + 1)};
      ASSERT_TRUE((*db)->Upsert("c", one, {.sync = false}).ok());
      const absl::Status s = no_ops[i](**db);
      ASSERT_TRUE(s.ok()) << s;
      fs.PowerOff();
    }
    ASSERT_TRUE(fs.DropUnsyncedData().ok());
    auto db = DB::Open(dir, Options());
    ASSERT_TRUE(db.ok()) << db.status();
    const State found = Read(**db);
    EXPECT_TRUE(found.contains(i) && found.at(i) == i + 1)
        << "no-op " << i << ": the unsynced upsert before the synced call was lost";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
