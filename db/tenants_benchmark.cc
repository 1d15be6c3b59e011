// Micro-benchmarks of tenant access changes through the public API: Grant and Revoke of a batch
// of keys (one WriteBatch, not synced), per key; the goal is <= 5 us per key (Curator: 2.4 us in
// RAM only). Also the access table alone (tenants/access_table.h), without RocksDB.
//
//   build/bin/tenants_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <random>

#include "shoal/db.h"
#include "tenants/access_table.h"

namespace shoal {
namespace {

constexpr uint64_t kRecords = 100000;
constexpr uint32_t kDim = 16;

class Fixture {
 public:
  Fixture() {
    std::string tmpl = "/tmp/tenants_benchmark_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) abort();
    dir_ = tmpl;
    db_ = *DB::Open(dir_, Options{});
    if (!db_->CreateCollection({"c", kDim, Metric::kL2}).ok()) abort();
    for (int t = 0; t < 100; ++t)
      db_->CreateTenant("c", {"t" + std::to_string(t), {}}).IgnoreError();
    std::mt19937 rng(1);
    std::normal_distribution<float> g;
    WriteOptions as_owner;
    as_owner.tenant = "t0";
    std::vector<Record> batch;
    for (uint64_t k = 0; k < kRecords; ++k) {
      Record r;
      r.key = k;
      r.vector.resize(kDim);
      for (float& x : r.vector) x = g(rng);
      batch.push_back(std::move(r));
      if (batch.size() == 10000) {
        if (!db_->Upsert("c", batch, as_owner).ok()) abort();
        batch.clear();
      }
    }
  }
  ~Fixture() {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  DB& db() { return *db_; }

 private:
  std::string dir_;
  std::unique_ptr<DB> db_;
};

Fixture& Shared() {
  static Fixture* f = new Fixture();
  return *f;
}

void BM_GrantThenRevoke(benchmark::State& state) {
  DB& db = Shared().db();
  const size_t batch = static_cast<size_t>(state.range(0));
  std::vector<Key> keys;
  uint64_t next = 0;
  int tenant = 1;
  for (auto _ : state) {
    keys.clear();
    for (size_t i = 0; i < batch; ++i) keys.push_back(Key{(next++) % kRecords});
    const std::string t = "t" + std::to_string(tenant);
    tenant = tenant % 99 + 1;
    if (!db.Grant("c", t, keys, {}).ok()) state.SkipWithError("grant failed");
    if (!db.Revoke("c", t, keys, {}).ok()) state.SkipWithError("revoke failed");
  }
  // Per key: one grant plus one revoke.
  state.counters["us_per_key_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_GrantThenRevoke)->Arg(1)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_AccessTableGrant(benchmark::State& state) {
  tenants::AccessTable table;
  for (tenants::TenantId t = 1; t <= 100; ++t) table.AddTenant(t);
  for (uint64_t id = 0; id < kRecords; ++id) table.SetOwner(id, 1, 100);
  uint64_t next = 0;
  tenants::TenantId t = 2;
  for (auto _ : state) {
    const uint64_t id = (next++) % kRecords;
    table.Grant(id, t);
    table.Revoke(id, t);
    if (id == kRecords - 1) t = t % 99 + 2;
  }
}
BENCHMARK(BM_AccessTableGrant);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
