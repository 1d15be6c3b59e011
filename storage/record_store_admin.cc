// RecordStore's administrative half: alias rows, compaction and checkpoints. Kept apart from
// record_store.cc (the record and index rows) so each file stays about one job.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/metadata.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_batch.h"
#include "storage/record_codec.h"
#include "storage/record_store.h"

namespace shoal::storage {
namespace {

// Catalog rows "alias/NAME" -> the collection's name. Never under "collection/", so
// LoadCatalog does not see them.
constexpr char kAliasRowPrefix[] = "alias/";

// The first key after every key starting with `prefix` (prefix is never all 0xff here).
std::string AfterPrefix(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> RecordStore::LoadAliases() {
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), catalog_));
  for (it->Seek(kAliasRowPrefix); it->Valid() && it->key().starts_with(kAliasRowPrefix);
       it->Next()) {
    out.emplace_back(std::string(it->key().ToStringView().substr(sizeof(kAliasRowPrefix) - 1)),
                     it->value().ToString());
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning aliases");
  return out;
}

absl::Status RecordStore::PutAlias(std::string_view alias, std::string_view collection) {
  const std::string row = absl::StrCat(kAliasRowPrefix, std::string(alias));
  rocksdb::WriteBatch batch;
  if (collection.empty()) {
    batch.Delete(catalog_, row);
  } else {
    batch.Put(catalog_, row, rocksdb::Slice(collection.data(), collection.size()));
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Write(wo, &batch), absl::StrCat("writing alias ", std::string(alias)));
}

absl::Status RecordStore::Compact(std::optional<uint32_t> collection_id) {
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  std::string begin, end;
  rocksdb::Slice begin_slice, end_slice;
  rocksdb::Slice* from = nullptr;
  rocksdb::Slice* to = nullptr;
  if (collection_id.has_value()) {
    begin = CollectionPrefix(*collection_id);
    end = AfterPrefix(begin);
    begin_slice = begin;
    end_slice = end;
    from = &begin_slice;
    to = &end_slice;
  }
  for (rocksdb::ColumnFamilyHandle* family : {records_, keys_, index_}) {
    rocksdb::Status s = db_->CompactRange(options, family, from, to);
    if (!s.ok()) return FromRocks(s, "compacting");
  }
  if (!collection_id.has_value()) {
    return FromRocks(db_->CompactRange(options, catalog_, nullptr, nullptr), "compacting");
  }
  return absl::OkStatus();
}

absl::Status RecordStore::Checkpoint(const std::string& dir) {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_, &raw);
  if (!s.ok()) return FromRocks(s, "checkpoint");
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush = 0: flush the memtables first, so the checkpoint holds SST files only
  // (plus an empty WAL) and opens fast.
  return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0),
                   absl::StrCat("checkpoint into ", dir));
}

absl::StatusOr<std::vector<std::string>> RecordStore::UnreferencedTableFiles() {
  std::vector<rocksdb::LiveFileMetaData> live;
  db_->GetLiveFilesMetaData(&live);
  absl::flat_hash_set<std::string> live_names;
  for (const rocksdb::LiveFileMetaData& f : live) {
    live_names.insert(std::string(absl::StripPrefix(f.name, "/")));
  }
  std::vector<std::string> children;
  rocksdb::Status s = env_->GetChildren(db_->GetName(), &children);
  if (!s.ok()) return FromRocks(s, absl::StrCat("listing ", db_->GetName()));
  std::vector<std::string> out;
  for (const std::string& name : children) {
    if (absl::EndsWith(name, ".sst") && !live_names.contains(name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shoal::storage
