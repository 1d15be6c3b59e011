#include "bench/bare_rocksdb_write.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "bench/report.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"

namespace shoal::bench {
namespace {

// "tenant/" <cid:4> 'G' <tenant:4> <row:8>, as storage/records/record_store_tenants.cc keys it.
std::string GrantKey(uint32_t tenant, uint64_t row) {
  std::string key = "tenant/";
  key.append({0, 0, 0, 1, 'G'});
  for (int i = 3; i >= 0; --i) key.push_back(static_cast<char>(tenant >> (8 * i)));
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(row >> (8 * i)));
  return key;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BareRocksWrite>> BareRocksWrite::Open(size_t prefill) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/shoal_bare_write_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", tmpl, " failed"));
  }
  std::unique_ptr<BareRocksWrite> out(new BareRocksWrite());
  out->dir_ = tmpl;
  rocksdb::Options options;
  options.create_if_missing = true;
  options.paranoid_checks = true;
  options.IncreaseParallelism(2);
  options.avoid_flush_during_shutdown = true;
  rocksdb::Status s = rocksdb::DB::Open(options, out->dir_, &out->db_);
  if (!s.ok()) return absl::InternalError(absl::StrCat("opening ", tmpl, ": ", s.ToString()));
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < prefill; ++i) {
    // Tenants 1,000,000+ so that the timed rows never meet these.
    batch.Put(GrantKey(1000000 + static_cast<uint32_t>(i % 1000), i), "");
    if (batch.Count() == 10000 || i + 1 == prefill) {
      s = out->db_->Write(rocksdb::WriteOptions(), &batch);
      if (!s.ok()) return absl::InternalError(absl::StrCat("prefill: ", s.ToString()));
      batch.Clear();
    }
  }
  return out;
}

BareRocksWrite::~BareRocksWrite() {
  if (db_ != nullptr) {
    db_->Close().PermitUncheckedError();
    delete db_;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

double BareRocksWrite::Time(bool put, bool marker, uint32_t tenant, uint64_t row) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  rocksdb::WriteBatch batch;
  const std::string key = GrantKey(tenant, row);
  if (put) {
    batch.Put(key, "");
  } else {
    batch.Delete(key);
  }
  if (marker) batch.Put("memtable_marker", "");
  db_->Write(rocksdb::WriteOptions(), &batch).PermitUncheckedError();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double BareRocksWrite::TimeBatch(bool put, uint32_t tenant, std::span<const uint32_t> rows) {
  const double t0 = ThreadCpuSeconds();
  rocksdb::WriteBatch batch;
  for (uint32_t row : rows) {
    const std::string key = GrantKey(tenant, row);
    if (put) {
      batch.Put(key, "");
    } else {
      batch.Delete(key);
    }
  }
  db_->Write(rocksdb::WriteOptions(), &batch).PermitUncheckedError();
  return (ThreadCpuSeconds() - t0) * 1e6;
}

}  // namespace shoal::bench
