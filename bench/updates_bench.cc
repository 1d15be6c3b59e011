#include "bench/updates_bench.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/report.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "shoal/dataset.h"
#include "shoal/db.h"
#include "storage/records/record_codec.h"

namespace shoal::bench {
namespace {

namespace fs = std::filesystem;

// Latencies of one search phase (ms) and what the queries did: why a phase is slower.
struct Latencies {
  std::vector<double> ms;
  SearchStats stats;      // summed over the phase's queries
  size_t buffer_sum = 0;  // unindexed (exact buffer) vectors, sampled every 16th query
  size_t buffer_max = 0;
  size_t buffer_samples = 0;
  double Percentile(double p) const;
  void Merge(const Latencies& o) {
    ms.insert(ms.end(), o.ms.begin(), o.ms.end());
    stats.postings_read += o.stats.postings_read;
    stats.vectors_scored += o.stats.vectors_scored;
    stats.cache_hits += o.stats.cache_hits;
    stats.bytes_read += o.stats.bytes_read;
    stats.full_vectors_read += o.stats.full_vectors_read;
    buffer_sum += o.buffer_sum;
    buffer_max = std::max(buffer_max, o.buffer_max);
    buffer_samples += o.buffer_samples;
  }
  void Print(const char* phase) const {
    const double n = static_cast<double>(std::max<size_t>(ms.size(), 1));
    std::printf(
        "search %s: p50 %.3f ms p99 %.3f ms (%zu queries); per query %.1f postings (%.0f "
        "entries scored), %.1f cache hits, %.1f KiB read (%.2f full vectors); buffer %.0f avg, "
        "%zu max\n",
        phase, Percentile(0.5), Percentile(0.99), ms.size(), stats.postings_read / n,
        stats.vectors_scored / n, stats.cache_hits / n, stats.bytes_read / n / 1024,
        stats.full_vectors_read / n, buffer_samples ? double(buffer_sum) / buffer_samples : 0.0,
        buffer_max);
  }
};

// The p-th percentile of `ms` (nth element; reorders a copy).
double PercentileOf(std::vector<double> ms, double p) {
  if (ms.empty()) return 0;
  const size_t i = std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()));
  std::nth_element(ms.begin(), ms.begin() + i, ms.end());
  return ms[i];
}

// A 90% bootstrap interval of p99(busy) / p99(idle): both samples redrawn with replacement 200
// times (fixed seed). It shows how far the ratio moves with which queries happened to be slow —
// the noise of a p99 over a few thousand queries — not the drift of the machine between runs.
std::pair<double, double> RatioInterval(const std::vector<double>& idle,
                                        const std::vector<double>& busy) {
  if (idle.empty() || busy.empty()) return {0, 0};
  std::mt19937_64 rng(7);
  auto redraw = [&](const std::vector<double>& from) {
    std::uniform_int_distribution<size_t> pick(0, from.size() - 1);
    std::vector<double> out(from.size());
    for (double& x : out) x = from[pick(rng)];
    return PercentileOf(std::move(out), 0.99);
  };
  std::vector<double> ratios;
  for (int i = 0; i < 200; ++i) ratios.push_back(redraw(busy) / redraw(idle));
  return {PercentileOf(ratios, 0.05), PercentileOf(ratios, 0.95)};
}

double Latencies::Percentile(double p) const { return PercentileOf(ms, p); }

// CPU seconds (user + system) of the process (RUSAGE_SELF) or the calling thread
// (RUSAGE_THREAD): on a shared machine, what the work cost rather than how long it waited.
double CpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

Record Rec(const Matrix& m, size_t row) {
  return {uint64_t{row}, std::vector<float>(m.Row(row), m.Row(row) + m.cols)};
}

// One thread searching single queries round-robin until *stop, `qps` a second (open loop: a
// query is sent at its scheduled time, or at once when the previous one ran late); each query's
// latency and stats go to the phase *phase points to when it starts.
absl::Status SearchLoop(DB* db, const Matrix& q, SearchParams p, double qps,
                        std::atomic<bool>* stop, std::atomic<Latencies*>* phase) {
  const double start = NowSeconds();
  for (size_t i = 0, n = 0; !stop->load(); i = (i + 1) % q.rows, ++n) {
    const double due = start + static_cast<double>(n) / qps;
    if (const double wait = due - NowSeconds(); wait > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    Latencies* out = phase->load();
    p.stats = &out->stats;
    const double t0 = NowSeconds();
    auto hits = db->Search("c", std::span<const float>(q.Row(i), q.cols), p);
    if (!hits.ok()) return hits.status();
    out->ms.push_back((NowSeconds() - t0) * 1e3);
    if (n % 16 == 0) {
      SHOAL_ASSIGN_OR_RETURN(CollectionInfo info, db->DescribeCollection("c"));
      out->buffer_sum += info.unindexed_vectors;
      out->buffer_max = std::max<size_t>(out->buffer_max, info.unindexed_vectors);
      ++out->buffer_samples;
    }
  }
  return absl::OkStatus();
}

// Recall@k of collection "c" against an exact collection "truth" of the same live set.
absl::StatusOr<double> Recall(DB* db, const Matrix& q, const SearchParams& p) {
  SHOAL_ASSIGN_OR_RETURN(auto got, db->Search("c", {q.data.data(), q.rows * q.cols}, p));
  SearchParams exact{.k = p.k};
  SHOAL_ASSIGN_OR_RETURN(auto want, db->Search("truth", {q.data.data(), q.rows * q.cols}, exact));
  size_t found = 0, total = 0;
  for (size_t i = 0; i < q.rows; ++i) {
    absl::flat_hash_set<uint64_t> g;
    for (const Hit& h : got[i]) g.insert(std::get<uint64_t>(h.key));
    for (const Hit& h : want[i]) found += g.contains(std::get<uint64_t>(h.key)), ++total;
  }
  return double(found) / double(std::max<size_t>(total, 1));
}

absl::Status LoadRows(DB* db, const std::string& name, const Matrix& m, size_t begin, size_t end) {
  for (size_t b = begin; b < end; b += 10000) {
    std::vector<Record> batch;
    for (size_t i = b; i < std::min(end, b + 10000); ++i) batch.push_back(Rec(m, i));
    SHOAL_RETURN_IF_ERROR(db->Upsert(name, batch, {}));
  }
  return absl::OkStatus();
}

// The same writes Shoal's insert path makes (record row, key row, id counter per batch),
// straight into RocksDB; returns records per second. With `churn`, each insert batch is followed
// by a batch deleting as many earlier records (record row, key row, a tombstone row: what a
// Shoal delete writes), as the bench's churn does, and the rate counts both.
absl::StatusOr<double> RawRocksInserts(const std::string& dir, const Matrix& m, size_t begin,
                                       size_t end, size_t batch, bool sync, bool churn) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return absl::InternalError(s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  const double t0 = NowSeconds();
  for (size_t b = begin; b < end; b += batch) {
    rocksdb::WriteBatch wb;
    for (size_t i = b; i < std::min(end, b + batch); ++i) {
      wb.Put(storage::RecordRowKey(1, i), storage::EncodeRecord(Rec(m, i)));
      std::string key = "k", id;
      storage::PutFixed64BE(&key, i);
      storage::PutFixed64BE(&id, i);
      wb.Put(key, id);
    }
    std::string counter;
    storage::PutFixed64BE(&counter, b + batch);
    wb.Put("next_id", counter);
    s = db->Write(wo, &wb);
    if (!s.ok()) return absl::InternalError(s.ToString());
    if (!churn) continue;
    rocksdb::WriteBatch deletes;
    for (size_t i = b; i < std::min(end, b + batch); ++i) {
      const uint64_t old = i - begin;  // the bench deletes the first half's keys in order
      std::string key = "k", stale = "s";
      storage::PutFixed64BE(&key, old);
      storage::PutFixed64BE(&stale, old);
      deletes.Delete(storage::RecordRowKey(1, old));
      deletes.Delete(key);
      deletes.Put(stale, "");
    }
    s = db->Write(wo, &deletes);
    if (!s.ok()) return absl::InternalError(s.ToString());
  }
  return double(end - begin) / (NowSeconds() - t0);
}

// The sustained-insert quantity, like for like with RawRocksInserts(churn = false): a
// database of its own built on the same first half, then the second half inserted in the same
// synced batches as fast as the writer can, timed until DrainIndexUpdates returns (every insert
// in the postings, the exact buffer empty). No deletes, no searches.
struct InsertPhase {
  double write_s = 0, drain_s = 0;      // acknowledged writes; the index work left after them
  double writer_cpu = 0, rest_cpu = 0;  // the writing thread; the rest of the process
  uint64_t posting_bytes_written = 0;   // by the inserts' index work
};

absl::StatusOr<InsertPhase> SustainedInserts(const std::string& dir, const Options& db_options,
                                             const UpdatesBenchOptions& o, const Matrix& base,
                                             size_t half) {
  SHOAL_ASSIGN_OR_RETURN(auto db, DB::Open(dir, db_options));
  SHOAL_RETURN_IF_ERROR(db->CreateCollection({"c", static_cast<uint32_t>(base.cols), Metric::kL2}));
  SHOAL_RETURN_IF_ERROR(LoadRows(db.get(), "c", base, 0, half));
  SHOAL_RETURN_IF_ERROR(db->BuildIndex("c", o.spec));
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo before, db->DescribeCollection("c"));
  const WriteOptions wo{.sync = o.sync};
  InsertPhase out;
  const double cpu0 = CpuSeconds(RUSAGE_SELF), writer_cpu0 = CpuSeconds(RUSAGE_THREAD);
  const double t0 = NowSeconds();
  for (size_t b = half; b < 2 * half; b += o.batch) {
    std::vector<Record> ins;
    for (size_t i = b; i < std::min(2 * half, b + o.batch); ++i) ins.push_back(Rec(base, i));
    SHOAL_RETURN_IF_ERROR(db->Upsert("c", ins, wo));
  }
  const double t1 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(db->DrainIndexUpdates("c"));
  out.write_s = t1 - t0;
  out.drain_s = NowSeconds() - t1;
  out.writer_cpu = CpuSeconds(RUSAGE_THREAD) - writer_cpu0;
  out.rest_cpu = CpuSeconds(RUSAGE_SELF) - cpu0 - out.writer_cpu;
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo after, db->DescribeCollection("c"));
  out.posting_bytes_written = after.posting_bytes_written - before.posting_bytes_written;
  return out;
}

}  // namespace

absl::Status RunUpdatesBench(const UpdatesBenchOptions& o) {
  SHOAL_ASSIGN_OR_RETURN(AnnDataset ds, LoadDataset(o.dataset));
  const Matrix& base = ds.train;
  const size_t half = base.rows / 2;
  std::string root = o.dir;
  if (root.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "shoal_updates_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    root = tmpl;
  }
  const SearchParams params{.k = static_cast<uint32_t>(o.k), .max_postings = o.max_postings};
  const WriteOptions wo{.sync = o.sync};
  std::printf(
      "dataset %s: %zu x %zu, spec %s, batch %zu, sync %d, backlog %zu, write rate %s, "
      "batch-scheduled writes %d\n",
      o.dataset.c_str(), base.rows, base.cols, o.spec.c_str(), o.batch, o.sync, o.backlog,
      o.write_rate > 0 ? absl::StrCat(o.write_rate, " inserts/s").c_str() : "max",
      o.batch_scheduled_writes);

  Options db_options;
  db_options.index_update_backlog = o.backlog;
  db_options.batch_scheduled_writes = o.batch_scheduled_writes;
  if (o.index_update_batch != 0) db_options.index_update_batch = o.index_update_batch;
  SHOAL_ASSIGN_OR_RETURN(auto db, DB::Open(root + "/churn", db_options));
  const CollectionSpec spec{"c", static_cast<uint32_t>(base.cols), Metric::kL2};
  SHOAL_RETURN_IF_ERROR(db->CreateCollection(spec));
  SHOAL_RETURN_IF_ERROR(LoadRows(db.get(), "c", base, 0, half));
  double t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(db->BuildIndex("c", o.spec));
  std::printf("build of %zu vectors: %.1f s\n", half, NowSeconds() - t0);

  // Idle latency, once every query has run (untimed): the busy phase finds its postings cached
  // too, so cold reads after the build count in neither.
  for (size_t i = 0; o.warm_up && i < ds.test.rows; ++i) {
    SHOAL_RETURN_IF_ERROR(
        db->Search("c", std::span<const float>(ds.test.Row(i), ds.test.cols), params).status());
  }
  // One thread searches throughout; `phase` says where its latencies go. The churn (insert the
  // new half, delete the whole old half, one batch of each in turn) runs in `rounds` parts, each
  // after an idle window (nothing written, no index work left) and followed by the drain of its
  // index work: with several rounds, idle and busy windows alternate, so load from elsewhere on
  // a shared machine falls on both alike.
  std::atomic<bool> stop{false};
  Latencies idle, writing, draining;
  std::atomic<Latencies*> phase{&idle};
  absl::Status search_status;
  double search_cpu = 0;
  const double cpu0 = CpuSeconds(RUSAGE_SELF), writer_cpu0 = CpuSeconds(RUSAGE_THREAD);
  std::thread search_thread([&] {
    pthread_setname_np(pthread_self(), "searcher");  // for perf's and ps's filters
    search_status = SearchLoop(db.get(), ds.test, params, o.search_qps, &stop, &phase);
    search_cpu = CpuSeconds(RUSAGE_THREAD);
  });
  double insert_s = 0, delete_s = 0, acked = 0, drain = 0;
  const size_t rounds = std::max<size_t>(1, o.rounds);
  absl::Status churn_status = [&]() -> absl::Status {
    for (size_t r = 0; r < rounds; ++r) {
      phase = &idle;
      std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds / rounds));
      phase = &writing;
      const size_t first = half * r / rounds, last = half * (r + 1) / rounds;
      const double churn_start = NowSeconds();
      for (size_t b = first; b < last; b += o.batch) {
        if (o.write_rate > 0) {  // open loop: each batch at its time, or at once when late
          const double due = churn_start + static_cast<double>(b - first) / o.write_rate;
          if (const double wait = due - NowSeconds(); wait > 0) {
            std::this_thread::sleep_for(std::chrono::duration<double>(wait));
          }
        }
        std::vector<Record> ins;
        std::vector<Key> del;
        for (size_t i = b; i < std::min(last, b + o.batch); ++i) {
          ins.push_back(Rec(base, half + i));
          del.push_back(uint64_t{i});
        }
        t0 = NowSeconds();
        SHOAL_RETURN_IF_ERROR(db->Upsert("c", ins, wo));
        insert_s += NowSeconds() - t0;
        t0 = NowSeconds();
        SHOAL_RETURN_IF_ERROR(db->Delete("c", del, wo).status());
        delete_s += NowSeconds() - t0;
      }
      acked += NowSeconds() - churn_start;
      phase = &draining;
      t0 = NowSeconds();
      SHOAL_RETURN_IF_ERROR(o.sweep_every_round ? db->FlushIndexUpdates("c")
                                                : db->DrainIndexUpdates("c"));
      drain += NowSeconds() - t0;
    }
    return absl::OkStatus();
  }();
  stop = true;
  search_thread.join();
  const double writer_cpu = CpuSeconds(RUSAGE_THREAD) - writer_cpu0;
  const double rest_cpu = CpuSeconds(RUSAGE_SELF) - cpu0 - writer_cpu - search_cpu;
  SHOAL_RETURN_IF_ERROR(churn_status);
  SHOAL_RETURN_IF_ERROR(search_status);
  Latencies busy = writing;
  busy.Merge(draining);
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo info, db->DescribeCollection("c"));

  // Recall: churned index (with the tombstones the lazy GC left) vs a fresh build of the same
  // live set.
  SHOAL_RETURN_IF_ERROR(db->CreateCollection({"truth", spec.dimension, Metric::kL2}));
  SHOAL_RETURN_IF_ERROR(LoadRows(db.get(), "truth", base, half, 2 * half));
  SHOAL_ASSIGN_OR_RETURN(double churned, Recall(db.get(), ds.test, params));
  // What the lazy GC left, swept out at once (not part of the sustained rate).
  t0 = NowSeconds();
  SHOAL_RETURN_IF_ERROR(db->FlushIndexUpdates("c"));
  const double full_sweep = NowSeconds() - t0;
  SHOAL_ASSIGN_OR_RETURN(CollectionInfo swept, db->DescribeCollection("c"));
  {
    SHOAL_ASSIGN_OR_RETURN(auto fresh, DB::Open(root + "/fresh", Options{}));
    SHOAL_RETURN_IF_ERROR(fresh->CreateCollection(spec));
    SHOAL_RETURN_IF_ERROR(LoadRows(fresh.get(), "c", base, half, 2 * half));
    SHOAL_RETURN_IF_ERROR(fresh->BuildIndex("c", o.spec));
    SHOAL_RETURN_IF_ERROR(fresh->CreateCollection({"truth", spec.dimension, Metric::kL2}));
    SHOAL_RETURN_IF_ERROR(LoadRows(fresh.get(), "truth", base, half, 2 * half));
    SHOAL_ASSIGN_OR_RETURN(double rebuilt, Recall(fresh.get(), ds.test, params));
    // Other databases' threads stay idle meanwhile (everything drained, nothing written).
    SHOAL_ASSIGN_OR_RETURN(InsertPhase inserts,
                           SustainedInserts(root + "/inserts", db_options, o, base, half));
    double cpu = CpuSeconds(RUSAGE_SELF);
    SHOAL_ASSIGN_OR_RETURN(double raw, RawRocksInserts(root + "/rocksdb", base, half, 2 * half,
                                                       o.batch, o.sync, /*churn=*/false));
    const double raw_cpu = CpuSeconds(RUSAGE_SELF) - cpu;
    cpu = CpuSeconds(RUSAGE_SELF);
    SHOAL_ASSIGN_OR_RETURN(double raw_churn,
                           RawRocksInserts(root + "/rocksdb_churn", base, half, 2 * half, o.batch,
                                           o.sync, /*churn=*/true));
    const double raw_churn_cpu = CpuSeconds(RUSAGE_SELF) - cpu;
    const double ins_rate = half / insert_s, del_rate = half / delete_s;
    const double sustained = half / (acked + drain);
    std::printf("inserts acknowledged: %.0f /s (%.2f s), deletes: %.0f /s (%.2f s)\n", ins_rate,
                insert_s, del_rate, delete_s);
    std::printf("drain after churn: %.2f s; sustained inserts incl. index work: %.0f /s (%s)\n",
                drain, sustained,
                o.sweep_every_round ? "full sweep every round" : "lazy GC, as in the background");
    std::printf(
        "then a full sweep (FlushIndexUpdates): %.2f s, %lu tombstones before it, %.0f posting "
        "bytes per inserted vector; sustained with it counted in %.0f /s\n",
        full_sweep, info.tombstones,
        static_cast<double>(swept.posting_bytes_written - info.posting_bytes_written) /
            static_cast<double>(half),
        half / (acked + drain + full_sweep));
    std::printf("index after churn: %lu postings, %lu splits, %lu merges, %lu reassigned\n",
                info.postings, info.posting_splits, info.posting_merges, info.vectors_reassigned);
    std::printf(
        "posting file: %.0f bytes written per inserted vector (appends: %lu), vectors.dat "
        "compactions: %lu\n",
        static_cast<double>(info.posting_bytes_written) / static_cast<double>(half),
        info.posting_appends, info.vector_file_compactions);
    std::printf(
        "raw RocksDB, same bytes and batches: %.0f records/s inserted; %.0f inserted/s with the "
        "churn's deletes written too\n",
        raw, raw_churn);
    const double us = 1e6 / static_cast<double>(half);
    std::printf(
        "CPU per inserted vector during the churn and its drains: writer %.1f us, index "
        "maintenance + publisher + RocksDB's threads %.1f us (searcher %.2f s apart); raw "
        "RocksDB %.1f us per record, %.1f us with the deletes; CPU ratio raw churn / Shoal "
        "%.2f\n",
        writer_cpu * us, rest_cpu * us, search_cpu, raw_cpu * us, raw_churn_cpu * us,
        raw_churn_cpu / (writer_cpu + rest_cpu));
    const double ins_acked = half / inserts.write_s;
    const double ins_sustained = half / (inserts.write_s + inserts.drain_s);
    std::printf(
        "sustained inserts (own database built on the same half, the new half inserted in the "
        "same synced batches, no deletes, no searches): %.0f /s acknowledged (%.2f s), then a "
        "drain of %.2f s: %.0f /s sustained, index work included; CPU per inserted vector: "
        "writer %.1f us, index side %.1f us; %.0f posting bytes per inserted vector\n",
        ins_acked, inserts.write_s, inserts.drain_s, ins_sustained, inserts.writer_cpu * us,
        inserts.rest_cpu * us, static_cast<double>(inserts.posting_bytes_written) / half);
    const double p99i = idle.Percentile(0.99), p99b = busy.Percentile(0.99);
    idle.Print("idle");
    busy.Print("during updates");
    writing.Print("  while writing");
    draining.Print("  while draining");
    std::printf("recall@%zu after 100%% churn %.4f, fresh build %.4f\n", o.k, churned, rebuilt);
    const auto [low, high] = RatioInterval(idle.ms, busy.ms);
    std::printf(
        "GOAL p99 updates/idle %.2f (<= 1.5): %s; 90%% bootstrap interval %.2f-%.2f; while "
        "writing %.2f, while draining %.2f\n",
        p99b / p99i, p99b <= 1.5 * p99i ? "met" : "NOT met", low, high,
        writing.Percentile(0.99) / p99i, draining.Percentile(0.99) / p99i);
    std::printf("GOAL recall churned - fresh %+.4f (>= -0.01): %s\n", churned - rebuilt,
                churned >= rebuilt - 0.01 ? "met" : "NOT met");
    // Inserts against RocksDB writing the same inserts: the insert-only phase, never paced.
    std::printf(
        "GOAL inserts / raw RocksDB inserts, same bytes: %.2f acknowledged (>= 0.5): %s; %.2f "
        "sustained, index work included (>= 0.5): %s\n",
        ins_acked / raw, ins_acked >= 0.5 * raw ? "met" : "NOT met", ins_sustained / raw,
        ins_sustained >= 0.5 * raw ? "met" : "NOT met");
    if (o.write_rate > 0) {
      // Paced writes leave the writer idle between batches: its rate says nothing of capacity.
      std::printf(
          "churn: inserts / raw RocksDB inserts %.2f acknowledged (paced by --write-rate)\n",
          ins_rate / raw);
    } else {
      // The churn's time counts its deletes and their index work: against RocksDB writing the
      // same inserts and deletes, the writes compared are the same. Its inserts over that time
      // against RocksDB writing the inserts alone was this line's GOAL before session 15.
      std::printf(
          "churn, index work included / raw RocksDB churn (inserts + deletes both sides) %.2f; "
          "the churn's inserts over its whole time / raw RocksDB inserts alone %.2f, %.2f with "
          "the final full sweep; the churn's inserts acknowledged / raw RocksDB inserts %.2f\n",
          sustained / raw_churn, sustained / raw, half / (acked + drain + full_sweep) / raw,
          ins_rate / raw);
    }
  }
  db.reset();
  if (o.dir.empty()) fs::remove_all(root);
  return absl::OkStatus();
}

void RegisterUpdatesCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<UpdatesBenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "updates", "Online inserts/deletes of the SSD index: throughput, latency, recall vs rebuild");
  cmd->add_option("--dataset", options->dataset, "synthetic:... | fashion-mnist | PATH.hdf5")
      ->capture_default_str();
  cmd->add_option("--spec", options->spec, "index spec")->capture_default_str();
  cmd->add_option("--batch", options->batch, "records per write")->capture_default_str();
  cmd->add_option("--sync", options->sync, "WriteOptions::sync")->capture_default_str();
  cmd->add_option("--k", options->k, "neighbours per query")->capture_default_str();
  cmd->add_option("--max-postings", options->max_postings, "search knob")->capture_default_str();
  cmd->add_option("--idle-seconds", options->idle_seconds, "idle latency phase")
      ->capture_default_str();
  cmd->add_option("--search-qps", options->search_qps, "paced single-query searches per second")
      ->capture_default_str();
  cmd->add_option("--backlog", options->backlog,
                  "Options::index_update_backlog: buffered writes before writers wait")
      ->capture_default_str();
  cmd->add_option("--warm-up", options->warm_up,
                  "one untimed pass over the queries before the idle phase (0: the idle phase "
                  "starts cold, as before this option)")
      ->capture_default_str();
  cmd->add_option("--rounds", options->rounds,
                  "the churn in this many parts, each after an idle window of idle-seconds/rounds "
                  "and followed by its drain: idle and busy windows alternate in time")
      ->capture_default_str();
  cmd->add_option("--write-rate", options->write_rate,
                  "inserts per second during the churn, deletes at the same pace (0: as fast as "
                  "the writer can; the acknowledged throughput is only meaningful then)")
      ->capture_default_str();
  cmd->add_option("--sweep-every-round", options->sweep_every_round,
                  "FlushIndexUpdates (every tombstone swept out) after each round instead of "
                  "DrainIndexUpdates (garbage collection left to background maintenance)")
      ->capture_default_str();
  cmd->add_option("--index-update-batch", options->index_update_batch,
                  "Options::index_update_batch: vectors per drain step (0: the default)")
      ->capture_default_str();
  cmd->add_option("--batch-scheduled-writes", options->batch_scheduled_writes,
                  "Options::batch_scheduled_writes: the writer's wake-ups do not preempt searches")
      ->capture_default_str();
  cmd->add_option("--dir", options->dir, "scratch directory (kept)");
  cmd->callback([options, exit_code] {
    absl::Status status = RunUpdatesBench(*options);
    if (!status.ok()) std::fprintf(stderr, "shoal_bench updates: %s\n", status.ToString().c_str());
    *exit_code = status.ok() ? 0 : 1;
  });
}

}  // namespace shoal::bench
