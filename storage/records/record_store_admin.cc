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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/metadata.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/utilities/debug.h"
#include "rocksdb/write_batch.h"
#include "storage/records/record_codec.h"
#include "storage/records/record_store.h"

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

// 123 for "000123.sst"; 0 when the name is not a number.
uint64_t TableNumber(absl::string_view name) {
  uint64_t number = 0;
  return absl::SimpleAtoi(absl::StripSuffix(name, ".sst"), &number) ? number : 0;
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
  return Write(&batch, /*sync=*/true, absl::StrCat("writing alias ", std::string(alias)));
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
    rocksdb::Status s = db_->CompactRange(options, catalog_, nullptr, nullptr);
    KeepMemtableNonEmpty().IgnoreError();  // the compaction flushed every memtable
    return FromRocks(s, "compacting");
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
  s = checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0);
  KeepMemtableNonEmpty().IgnoreError();  // the checkpoint flushed every memtable
  return FromRocks(s, absl::StrCat("checkpoint into ", dir));
}

RecordStore::UnreferencedTable RecordStore::ClassifyUnreferenced(const std::string& name) {
  UnreferencedTable table{.name = name};
  const std::string path = absl::StrCat(db_->GetName(), "/", name);
  // The table names its column family; its merge operator is needed to read the entries.
  rocksdb::ColumnFamilyHandle* family = nullptr;
  {
    rocksdb::SstFileReader probe(rocksdb::Options{});
    rocksdb::Status s = probe.Open(path);
    if (!s.ok()) {
      table.harmless = true;
      table.detail = absl::StrCat("incomplete (a crash cut its write short): ", s.ToString());
      return table;
    }
    const std::string cf = probe.GetTableProperties()->column_family_name;
    for (rocksdb::ColumnFamilyHandle* h : {catalog_, records_, keys_, index_}) {
      if (h != nullptr && h->GetName() == cf) family = h;
    }
    if (family == nullptr) {
      table.detail = absl::StrCat("of unknown column family '", cf, "'");
      return table;
    }
  }
  rocksdb::SstFileReader reader(rocksdb::Options(db_->GetDBOptions(), db_->GetOptions(family)));
  if (rocksdb::Status s = reader.Open(path); !s.ok()) {
    table.detail = absl::StrCat("unreadable: ", s.ToString());
    return table;
  }
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
  uint64_t entries = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++entries;
    std::vector<rocksdb::KeyVersion> versions;
    rocksdb::Status s =
        rocksdb::GetAllKeyVersions(db_, family, it->key(), it->key(), 1024, &versions);
    const bool found = std::any_of(versions.begin(), versions.end(), [&](const auto& v) {
      // kTypeMerge (2): an operand of a merged row (the id counters); the table holds the
      // merged value, which no single operand equals.
      return v.value == it->value() || v.type == 2;
    });
    if (!s.ok() || !found) {
      table.detail = absl::StrCat("holds data the database lacks (column family '",
                                  family->GetName(), "', entry ", entries, ")");
      return table;
    }
  }
  if (!it->status().ok()) {
    table.detail = absl::StrCat("unreadable: ", it->status().ToString());
    return table;
  }
  table.harmless = true;
  table.detail = absl::StrCat("its ", entries, " entries are all in the database");
  return table;
}

absl::StatusOr<std::vector<RecordStore::UnreferencedTable>> RecordStore::UnreferencedTableFiles() {
  std::vector<rocksdb::LiveFileMetaData> live;
  db_->GetLiveFilesMetaData(&live);
  absl::flat_hash_set<std::string> live_names;
  for (const rocksdb::LiveFileMetaData& f : live) {
    live_names.insert(std::string(absl::StripPrefix(f.name, "/")));
  }
  std::vector<std::string> children;
  rocksdb::Status s = env_->GetChildren(db_->GetName(), &children);
  if (!s.ok()) return FromRocks(s, absl::StrCat("listing ", db_->GetName()));
  std::sort(children.begin(), children.end());
  // Table numbers only grow. A table numbered below a live one was an input of a flush or
  // compaction whose edit the MANIFEST holds (the job that replaced it finished; a crash came
  // before the file's deletion): superseded, harmless even where it holds rows since deleted.
  // One numbered above every live table was written after the MANIFEST's last edit: an
  // interrupted job's output, or a table whose edit a damaged MANIFEST lost — its contents tell.
  uint64_t newest_live = 0;
  for (const std::string& name : live_names) newest_live = std::max(newest_live, TableNumber(name));
  std::vector<UnreferencedTable> out;
  for (const std::string& name : children) {
    if (!absl::EndsWith(name, ".sst") || live_names.contains(name)) continue;
    if (TableNumber(name) < newest_live) {
      out.push_back({.name = name,
                     .harmless = true,
                     .detail = absl::StrCat("superseded by a finished flush or compaction (live "
                                            "tables go up to ",
                                            newest_live, ")")});
    } else {
      out.push_back(ClassifyUnreferenced(name));
    }
  }
  return out;
}

}  // namespace shoal::storage
