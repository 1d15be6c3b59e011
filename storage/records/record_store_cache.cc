// RecordStore's semantic-cache rows: catalog rows under "cache/" whose format cache/ owns.
// Kept in the catalog column family (no new family: old directories open unchanged).
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "storage/records/record_store.h"

namespace shoal::storage {
namespace {

constexpr char kCacheRowPrefix[] = "cache/";

std::string CacheRowKey(std::string_view key) {
  return absl::StrCat(kCacheRowPrefix, std::string(key));
}

// The first key after every key starting with `prefix`.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

absl::Status RecordStore::WriteCacheRows(std::span<const CacheWrite> writes, bool sync) {
  if (writes.empty()) return absl::OkStatus();
  rocksdb::WriteBatch batch;
  for (const CacheWrite& w : writes) {
    const std::string key = CacheRowKey(w.key);
    rocksdb::Status s;
    switch (w.kind) {
      case CacheWrite::Kind::kPut:
        s = batch.Put(catalog_, key, w.value);
        break;
      case CacheWrite::Kind::kDelete:
        s = batch.Delete(catalog_, key);
        break;
      case CacheWrite::Kind::kDeletePrefix:
        s = batch.DeleteRange(catalog_, key, PrefixEnd(key));
        break;
    }
    if (!s.ok()) return FromRocks(s, "batching cache rows");
  }
  return Write(&batch, sync, "writing cache rows");
}

absl::Status RecordStore::ScanCacheRows(
    std::string_view prefix,
    const std::function<absl::Status(std::string_view key, std::string_view value)>& fn) {
  const std::string start = CacheRowKey(prefix);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), catalog_));
  for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
    absl::Status s = fn(it->key().ToStringView().substr(sizeof(kCacheRowPrefix) - 1),
                        it->value().ToStringView());
    if (!s.ok()) return s;
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning cache rows");
  return absl::OkStatus();
}

absl::StatusOr<bool> RecordStore::GetCacheRow(std::string_view key, std::string* value) {
  thread_local std::string full;  // the thread's buffer: no allocation once warm
  full.assign(kCacheRowPrefix);
  full.append(key);
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_, full, value);
  if (s.IsNotFound()) return false;
  if (!s.ok()) return FromRocks(s, "reading cache row");
  return true;
}

absl::StatusOr<std::optional<std::string>> RecordStore::GetCacheRow(std::string_view key) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_, CacheRowKey(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "reading cache row");
  return std::optional<std::string>(std::move(value));
}

}  // namespace shoal::storage
