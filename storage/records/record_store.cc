#include "storage/records/record_store.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/table.h"
#include "rocksdb/transaction_log.h"
#include "rocksdb/write_batch.h"
#include "storage/records/record_codec.h"
#include "storage/records/rocksdb_env.h"
#include "storage/records/rocksdb_info_log.h"

namespace shoal::storage {
namespace {

constexpr char kCollectionRowPrefix[] = "collection/";
constexpr char kNextIdRowPrefix[] = "next_id/";
constexpr char kNextCollectionIdRow[] = "next_collection_id";
constexpr char kMemtableMarker[] = "memtable_marker";  // see KeepMemtableNonEmpty
constexpr uint8_t kCatalogVersion = 1;

std::string CollectionRow(std::string_view name) {
  return absl::StrCat(kCollectionRowPrefix, std::string(name));
}

std::string NextIdRow(uint32_t collection_id) {
  std::string row = kNextIdRowPrefix;
  PutFixed32BE(&row, collection_id);
  return row;
}

std::string EncodeU64(uint64_t v) {
  std::string out;
  PutFixed64BE(&out, v);
  return out;
}

absl::StatusOr<uint64_t> DecodeU64(std::string_view bytes, std::string_view where) {
  if (bytes.size() != 8) {
    return absl::DataLossError(absl::StrCat("catalog row ", std::string(where),
                                            ": expected 8 bytes, found ", bytes.size()));
  }
  return GetFixed64BE(bytes.data());
}

std::string EncodeCatalogRow(uint32_t id, const CollectionSpec& spec) {
  std::string out(1, static_cast<char>(kCatalogVersion));
  PutFixed32BE(&out, id);
  PutFixed32BE(&out, spec.dimension);
  out.push_back(static_cast<char>(spec.metric));
  return out;
}

absl::StatusOr<StoredCollection> DecodeCatalogRow(std::string_view name, std::string_view v) {
  if (v.size() != 10 || v[0] != kCatalogVersion || static_cast<uint8_t>(v[9]) > 2) {
    return absl::DataLossError(absl::StrCat("catalog row for collection '", std::string(name),
                                            "' is corrupt (", v.size(), " bytes)"));
  }
  StoredCollection c;
  c.id = GetFixed32BE(v.data() + 1);
  c.spec.name = std::string(name);
  c.spec.dimension = GetFixed32BE(v.data() + 5);
  c.spec.metric = static_cast<Metric>(v[9]);
  return c;
}

// Merge operator of the catalog family: keeps the larger of two 8-byte big-endian counters
// (byte order = numeric order), so id counters only grow whatever order batches commit in.
class MaxCounterOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    if (existing == nullptr || existing->size() != 8 ||
        (value.size() == 8 && value.compare(*existing) > 0)) {
      new_value->assign(value.data(), value.size());
    } else {
      new_value->assign(existing->data(), existing->size());
    }
    return true;
  }
  const char* Name() const override { return "shoal.MaxCounter"; }
};

// The info log of a read-only store: inspecting a directory must not write into it.
class DiscardingLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// Copies every WAL file of `dir` to `<dir>.quarantine/<unix seconds>/` before a salvaging open
// may drop the records after a damaged one, so that nothing is destroyed.
absl::Status QuarantineWal(rocksdb::Env* env, const std::string& dir) {
  std::vector<std::string> children;
  rocksdb::Status s = env->GetChildren(dir, &children);
  if (!s.ok()) return FromRocks(s, absl::StrCat("listing ", dir));
  const std::string target = absl::StrCat(dir, ".quarantine/", env->NowMicros() / 1000000);
  bool made = false;
  for (const std::string& name : children) {
    if (!absl::EndsWith(name, ".log")) continue;
    if (!made) {
      s = env->CreateDirIfMissing(absl::StrCat(dir, ".quarantine"));
      if (s.ok()) s = env->CreateDirIfMissing(target);
      if (!s.ok()) return FromRocks(s, absl::StrCat("creating ", target));
      made = true;
    }
    std::string contents;
    s = rocksdb::ReadFileToString(env, absl::StrCat(dir, "/", name), &contents);
    if (s.ok()) {
      s = rocksdb::WriteStringToFile(env, contents, absl::StrCat(target, "/", name),
                                     /*should_sync=*/true);
    }
    if (!s.ok()) return FromRocks(s, absl::StrCat("copying ", name, " to ", target));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(std::string(context), ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  if (s.IsNotSupported()) return absl::UnimplementedError(msg);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return absl::UnavailableError(msg);
  // NoSpace may arrive as a plain retryable I/O error (rocksdb_env.cc): the text tells.
  if (s.IsNoSpace() || absl::StrContains(msg, "No space left on device")) {
    return absl::ResourceExhaustedError(msg);
  }
  if (s.IsIOError() && absl::StrContains(s.ToString(), "lock")) {
    return absl::UnavailableError(absl::StrCat(msg, " (is another process using it?)"));
  }
  return absl::InternalError(msg);
}

RecordStore::Batch::Batch(const RecordStore* store, size_t reserved_bytes)
    : store_(store), batch_(store->batch_pool_.Take(reserved_bytes)) {}
RecordStore::Batch::Batch(Batch&&) noexcept = default;
RecordStore::Batch::~Batch() = default;

void RecordStore::Batch::PutRecord(uint32_t cid, uint64_t iid, const Record& record, bool new_key) {
  EncodeRecordTo(record, &scratch_);
  batch_->Put(store_->records_, RecordRowKey(cid, iid), scratch_);
  if (new_key) batch_->Put(store_->keys_, KeyMapRowKey(cid, record.key), EncodeU64(iid));
}

void RecordStore::Batch::DeleteRecord(uint32_t cid, uint64_t iid, const Key& key) {
  batch_->Delete(store_->records_, RecordRowKey(cid, iid));
  batch_->Delete(store_->keys_, KeyMapRowKey(cid, key));
}

void RecordStore::Batch::DeleteRecordRow(uint32_t cid, uint64_t iid) {
  batch_->Delete(store_->records_, RecordRowKey(cid, iid));
}

void RecordStore::Batch::SetNextInternalId(uint32_t cid, uint64_t next) {
  batch_->Merge(store_->catalog_, NextIdRow(cid), EncodeU64(next));
  catalog_row_ = true;
}

size_t RecordStore::Batch::Count() const { return batch_->Count(); }

absl::StatusOr<std::unique_ptr<RecordStore>> RecordStore::Open(const std::string& dir,
                                                               const StoreOptions& options) {
  rocksdb::Options db_options;
  db_options.create_if_missing = options.create_if_missing && !options.read_only;
  db_options.create_missing_column_families = true;
  db_options.paranoid_checks = true;
  db_options.IncreaseParallelism(2);
  auto env = NewRecoverableEnv(options.env != nullptr ? options.env : rocksdb::Env::Default());
  db_options.env = env.get();
  db_options.listeners.push_back(NewManualRecoveryListener());
  db_options.max_bgerror_resume_count = 0;
  // Everything acknowledged is in the WAL; the WAL-less marker (KeepMemtableNonEmpty) is not
  // worth a flush at close.
  db_options.avoid_flush_during_shutdown = true;
  // RocksDB's default (kPointInTimeRecovery) stops replay at the first bad record without an
  // error: one flipped bit dropped every acknowledged write after it.
  db_options.wal_recovery_mode = options.salvage_damaged_wal
                                     ? rocksdb::WALRecoveryMode::kPointInTimeRecovery
                                     : rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  if (options.read_only) {
    db_options.info_log = std::make_shared<DiscardingLogger>();
  } else {
    // RocksDB's own info log aborts the process on the line after a failed write (a full disk);
    // ours drops lines instead (rocksdb_info_log.h). RocksDB makes the directory only after it
    // has a logger, so it is made here first.
    if (db_options.create_if_missing) env->CreateDirIfMissing(dir).PermitUncheckedError();
    db_options.info_log = NewInfoLog(env.get(), dir);
  }
  if (options.salvage_damaged_wal && !options.read_only) {
    SHOAL_RETURN_IF_ERROR(QuarantineWal(env.get(), dir));
  }
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  rocksdb::ColumnFamilyOptions cf_options(db_options);
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  rocksdb::ColumnFamilyOptions catalog_options = cf_options;
  catalog_options.merge_operator = std::make_shared<MaxCounterOperator>();
  catalog_options.memtable_insert_with_hint_prefix_extractor = NewTenantIdRowHint();
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, catalog_options},
      {"records", cf_options},
      {"keys", cf_options},
      {"index", IndexFamilyOptions(cf_options)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  // A read-only open takes no lock of its own; holding RocksDB's keeps a writer from starting
  // (and finds one running) while a tool inspects the directory.
  rocksdb::FileLock* lock = nullptr;
  if (options.read_only) {
    rocksdb::Status l = env->LockFile(absl::StrCat(dir, "/LOCK"), &lock);
    if (!l.ok()) return FromRocks(l, absl::StrCat("opening ", dir));
  }
  rocksdb::Status s = options.read_only
                          ? rocksdb::DB::OpenForReadOnly(db_options, dir, families, &handles, &db)
                          : rocksdb::DB::Open(db_options, dir, families, &handles, &db);
  if (!s.ok() && lock != nullptr) env->UnlockFile(lock).PermitUncheckedError();
  if (s.IsCorruption() && !options.salvage_damaged_wal) {
    return absl::DataLossError(absl::StrCat(
        "opening ", dir, ": ", s.ToString(),
        ". Nothing was changed. If the WAL is damaged, replaying past the damage would lose "
        "acknowledged writes; to keep what precedes it, open once with salvage_damaged_wal "
        "(shoal offline --data DIR salvage-wal), which first copies the WAL aside"));
  }
  if (!s.ok()) return FromRocks(s, absl::StrCat("opening ", dir));
  auto store = std::unique_ptr<RecordStore>(new RecordStore());
  store->read_only_ = options.read_only;
  store->lock_ = lock;
  store->env_ = std::move(env);
  store->db_ = db;
  store->catalog_ = handles[0];
  store->records_ = handles[1];
  store->keys_ = handles[2];
  store->index_ = handles[3];
  if (!options.read_only) SHOAL_RETURN_IF_ERROR(store->KeepMemtableNonEmpty());
  return store;
}

RecordStore::~RecordStore() {
  if (db_ == nullptr) return;
  for (auto* h : {catalog_, records_, keys_, index_}) db_->DestroyColumnFamilyHandle(h);
  db_->Close().PermitUncheckedError();
  delete db_;
  if (lock_ != nullptr) env_->UnlockFile(lock_).PermitUncheckedError();
}

absl::StatusOr<std::vector<StoredCollection>> RecordStore::LoadCatalog() {
  std::vector<StoredCollection> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), catalog_));
  for (it->Seek(kCollectionRowPrefix); it->Valid() && it->key().starts_with(kCollectionRowPrefix);
       it->Next()) {
    std::string_view name = it->key().ToStringView().substr(sizeof(kCollectionRowPrefix) - 1);
    auto c = DecodeCatalogRow(name, it->value().ToStringView());
    if (!c.ok()) return c.status();
    std::string next;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_, NextIdRow(c->id), &next);
    if (s.ok()) {
      auto n = DecodeU64(next, "next_id");
      if (!n.ok()) return n.status();
      c->next_internal_id = *n;
    } else if (!s.IsNotFound()) {
      return FromRocks(s, "reading catalog");
    }
    out.push_back(*std::move(c));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning catalog");
  return out;
}

absl::StatusOr<StoredCollection> RecordStore::CreateCollection(const CollectionSpec& spec) {
  std::string next;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), catalog_, kNextCollectionIdRow, &next);
  uint64_t id = 1;
  if (s.ok()) {
    auto n = DecodeU64(next, kNextCollectionIdRow);
    if (!n.ok()) return n.status();
    id = *n;
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "reading catalog");
  }
  rocksdb::WriteBatch batch;
  batch.Put(catalog_, kNextCollectionIdRow, EncodeU64(id + 1));
  batch.Put(catalog_, CollectionRow(spec.name), EncodeCatalogRow(static_cast<uint32_t>(id), spec));
  SHOAL_RETURN_IF_ERROR(Write(&batch, /*sync=*/true, "creating collection"));
  return StoredCollection{static_cast<uint32_t>(id), spec, 0};
}

absl::Status RecordStore::DropCollection(const StoredCollection& c) {
  const std::string begin = CollectionPrefix(c.id);
  const std::string end = PrefixUpperBound(begin);
  rocksdb::WriteBatch batch;
  batch.Delete(catalog_, CollectionRow(c.spec.name));
  batch.Delete(catalog_, NextIdRow(c.id));
  batch.DeleteRange(records_, begin, end);
  batch.DeleteRange(keys_, begin, end);
  batch.DeleteRange(index_, begin, end);
  const std::string tenants = TenantRowPrefix(c.id);
  batch.DeleteRange(catalog_, tenants, PrefixUpperBound(tenants));
  return Write(&batch, /*sync=*/true, "dropping collection");
}

// RocksDB 7.8 (Debian's build keeps its assertions) aborts the process when a write uses a WAL
// writer that failed. Resume() replaces the failed writer only as a side effect of flushing a
// memtable, and it flushes only non-empty ones. So a catalog memtable must hold something when
// a write fails: every batch carries a marker row (kMemtableMarker), and it is put back without
// the WAL after whatever flushes every memtable (open, compaction, checkpoint, resume).
absl::Status RecordStore::KeepMemtableNonEmpty() {
  rocksdb::WriteOptions no_wal;
  no_wal.disableWAL = true;
  return FromRocks(db_->Put(no_wal, catalog_, kMemtableMarker, ""), "writing marker");
}

bool RecordStore::MemtablesEmpty() {
  for (rocksdb::ColumnFamilyHandle* h : {catalog_, records_, keys_, index_}) {
    uint64_t entries = 0;
    if (!db_->GetIntProperty(h, "rocksdb.num-entries-active-mem-table", &entries) || entries != 0) {
      return false;
    }
  }
  return true;
}

uint64_t RecordStore::CurrentWal() {
  std::unique_ptr<rocksdb::LogFile> wal;
  if (!db_->GetCurrentWalFile(&wal).ok() || wal == nullptr) return 0;
  return wal->LogNumber();
}

absl::Status RecordStore::ResumeWrites(std::string_view context) {
  const std::string stopped = absl::StrCat(
      std::string(context), ": writes are stopped after an I/O error and cannot resume yet: ");
  const uint64_t wal = CurrentWal();
  if (MemtablesEmpty() && (wal == 0 || wal == failed_wal_.load())) {
    // Resume() would clear the error and keep the failed WAL writer (see above). An earlier
    // Resume() that failed after switching the WAL (a flush it could not write) left the
    // memtables empty too, but with a fresh writer: that one may resume.
    return absl::UnavailableError(
        absl::StrCat(stopped,
                     "the write failed with nothing in memory to flush, so RocksDB cannot replace "
                     "its WAL; reads go on, and a restart resumes writes"));
  }
  rocksdb::Status r = db_->Resume();
  if (!r.ok()) {
    const std::string msg = absl::StrCat(stopped, r.ToString());
    return absl::StrContains(msg, "No space left on device") ? absl::ResourceExhaustedError(msg)
                                                             : absl::UnavailableError(msg);
  }
  SHOAL_RETURN_IF_ERROR(KeepMemtableNonEmpty());
  stopped_.store(false);
  return absl::OkStatus();
}

absl::Status RecordStore::Commit(Batch& batch, bool sync) {
  return Write(batch.batch_.get(), sync, "writing batch", batch.catalog_row_);
}

absl::Status RecordStore::SyncWal() {
  // An empty batch through the write path, not DB::SyncWAL: a failed fsync then stops writes
  // until Resume() replaces the WAL, as it does for a failed synced write.
  rocksdb::WriteBatch empty;
  return Write(&empty, /*sync=*/true, "syncing the WAL");
}

absl::Status RecordStore::Write(rocksdb::WriteBatch* batch, bool sync, std::string_view context,
                                bool has_catalog_row) {
  if (read_only_) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(context), ": the store is open read-only"));
  }
  if (stopped_.load()) {
    // An earlier write failed and RocksDB stopped writes; Resume() flushes what it can and
    // starts a fresh WAL. It fails while the fault lasts. No write runs meanwhile.
    absl::MutexLock lock(&resume_mu_);
    if (stopped_.load()) SHOAL_RETURN_IF_ERROR(ResumeWrites(context));
  }
  absl::ReaderMutexLock lock(&resume_mu_);
  // A batch with a catalog row of its own needs no marker: that row keeps the memtable non-empty.
  if (!has_catalog_row) batch->Put(catalog_, kMemtableMarker, "");
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  rocksdb::Status s = db_->Write(wo, batch);
  if (!s.ok()) {
    failed_wal_.store(CurrentWal());
    stopped_.store(true);
  }
  return FromRocks(s, context);
}

absl::StatusOr<std::optional<Record>> RecordStore::GetRecord(uint32_t cid, uint64_t iid) {
  std::string row = RecordRowKey(cid, iid);
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), records_, row, &value);
  if (s.IsNotFound()) return std::optional<Record>();
  if (!s.ok()) return FromRocks(s, "reading record");
  auto rec = DecodeRecord(value.ToStringView(), absl::StrCat("collection ", cid, " id ", iid));
  if (!rec.ok()) return rec.status();
  return std::optional<Record>(*std::move(rec));
}

absl::StatusOr<std::vector<std::optional<Record>>> RecordStore::GetRecords(
    uint32_t cid, std::span<const uint64_t> iids) {
  std::vector<std::string> rows;
  rows.reserve(iids.size());
  for (uint64_t iid : iids) rows.push_back(RecordRowKey(cid, iid));
  std::vector<rocksdb::Slice> keys(rows.begin(), rows.end());
  std::vector<rocksdb::PinnableSlice> values(iids.size());
  std::vector<rocksdb::Status> statuses(iids.size());
  db_->MultiGet(rocksdb::ReadOptions(), records_, keys.size(), keys.data(), values.data(),
                statuses.data());
  std::vector<std::optional<Record>> out(iids.size());
  for (size_t i = 0; i < iids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "reading records");
    auto rec =
        DecodeRecord(values[i].ToStringView(), absl::StrCat("collection ", cid, " id ", iids[i]));
    if (!rec.ok()) return rec.status();
    out[i] = *std::move(rec);
  }
  return out;
}

absl::StatusOr<std::optional<uint64_t>> RecordStore::LookupKey(uint32_t cid, const Key& key) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), keys_, KeyMapRowKey(cid, key), &value);
  if (s.IsNotFound()) return std::optional<uint64_t>();
  if (!s.ok()) return FromRocks(s, "reading key map");
  auto id = DecodeU64(value, "key map");
  if (!id.ok()) return id.status();
  return std::optional<uint64_t>(*id);
}

absl::Status RecordStore::ScanRecords(uint32_t cid,
                                      const std::function<absl::Status(uint64_t, Record&&)>& fn,
                                      uint64_t first_internal_id) {
  const std::string begin = RecordRowKey(cid, first_internal_id);
  const std::string end = PrefixUpperBound(CollectionPrefix(cid));
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, records_));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    if (it->key().size() != 12) {
      return absl::DataLossError(
          absl::StrCat("record row of collection ", cid, " has a ", it->key().size(), "-byte key"));
    }
    uint64_t iid = InternalIdFromRecordRowKey(it->key().ToStringView());
    auto rec =
        DecodeRecord(it->value().ToStringView(), absl::StrCat("collection ", cid, " id ", iid));
    if (!rec.ok()) return rec.status();
    if (absl::Status s = fn(iid, *std::move(rec)); !s.ok()) return s;
  }
  return FromRocks(it->status(), "scanning records");
}

absl::Status RecordStore::ScanKeys(uint32_t cid,
                                   const std::function<absl::Status(Key&&, uint64_t)>& fn) {
  return ScanKeysAfter(cid, nullptr, [&](Key&& key, uint64_t iid) -> absl::StatusOr<bool> {
    SHOAL_RETURN_IF_ERROR(fn(std::move(key), iid));
    return true;
  });
}

absl::Status RecordStore::ScanKeysAfter(
    uint32_t cid, const Key* after,
    const std::function<absl::StatusOr<bool>(Key&&, uint64_t)>& fn) {
  const std::string begin = after != nullptr ? KeyMapRowKey(cid, *after) : CollectionPrefix(cid);
  const std::string end = PrefixUpperBound(CollectionPrefix(cid));
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, keys_));
  it->Seek(begin);
  if (after != nullptr && it->Valid() && it->key() == rocksdb::Slice(begin)) it->Next();
  for (; it->Valid(); it->Next()) {
    auto key = DecodeKeyMapRowKey(it->key().ToStringView());
    if (!key.ok()) return key.status();
    auto iid = DecodeU64(it->value().ToStringView(), "key map");
    if (!iid.ok()) return iid.status();
    absl::StatusOr<bool> more = fn(*std::move(key), *iid);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
  }
  return FromRocks(it->status(), "scanning keys");
}

}  // namespace shoal::storage
