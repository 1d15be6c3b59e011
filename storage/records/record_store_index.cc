// RecordStore's index column family: the manifest, the posting directory, tombstones and the
// update watermark of each collection's SSD index. Kept apart from record_store.cc (the
// catalog, record and key rows) so each file stays about one job; the row layout below is
// known to this file only.
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/write_batch.h"
#include "storage/records/record_codec.h"
#include "storage/records/record_store.h"

namespace shoal::storage {
namespace {

// Rows: CollectionPrefix(cid) + kind [+ posting id (4 bytes) | internal id (8 bytes)].
enum : char { kIndexManifest = 'M', kIndexPosting = 'P', kIndexStale = 'S', kIndexWatermark = 'W' };

std::string IndexRowKey(uint32_t cid, char kind, uint64_t id = 0) {
  std::string key = CollectionPrefix(cid);
  key.push_back(kind);
  if (kind == kIndexPosting) PutFixed32BE(&key, static_cast<uint32_t>(id));
  if (kind == kIndexStale) PutFixed64BE(&key, id);
  return key;
}

// The index family's memtable insert hint: posting rows and tombstone rows are grouped by
// (collection, kind), so that a drain step's rows (ascending posting numbers) and a delete's
// tombstones (ascending ids) go in from where the group's last row went instead of from the top
// of a skip list that holds every version of every posting row.
class IndexRowHint final : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kGroupBytes = 4 + 1;
  const char* Name() const override { return "shoal.IndexRowHint"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), kGroupBytes);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    if (key.size() == kGroupBytes + 4) return key[kGroupBytes - 1] == kIndexPosting;
    if (key.size() == kGroupBytes + 8) return key[kGroupBytes - 1] == kIndexStale;
    return false;
  }
};

std::string EncodePostingRow(const PostingRow& row) {
  std::string out;
  PutFixed64BE(&out, row.first_page);
  PutFixed32BE(&out, row.num_pages);
  PutFixed32BE(&out, row.bytes);
  PutFixed32BE(&out, row.count);
  if (row.origin != UINT32_MAX || !row.centroid.empty()) {
    PutFixed32BE(&out, row.origin);
    for (float f : row.centroid) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      PutFixed32BE(&out, bits);
    }
  }
  return out;
}

}  // namespace

void RecordStore::Batch::MarkStale(uint32_t cid, uint64_t iid) {
  batch_->Put(store_->index_, IndexRowKey(cid, kIndexStale, iid), "");
}

absl::Status RecordStore::CommitIndex(uint32_t cid, const std::string& manifest,
                                      std::span<const PostingRow> postings) {
  const std::string begin = CollectionPrefix(cid);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(index_, begin, PrefixUpperBound(begin));
  batch.Put(index_, IndexRowKey(cid, kIndexManifest), manifest);
  for (const PostingRow& row : postings) {
    batch.Put(index_, IndexRowKey(cid, kIndexPosting, row.posting), EncodePostingRow(row));
  }
  return Write(&batch, /*sync=*/true, "committing index");
}

std::shared_ptr<const rocksdb::SliceTransform> NewIndexRowHint() {
  return std::make_shared<IndexRowHint>();
}

rocksdb::ColumnFamilyOptions IndexFamilyOptions(const rocksdb::ColumnFamilyOptions& base) {
  rocksdb::ColumnFamilyOptions options = base;
  options.memtable_insert_with_hint_prefix_extractor = NewIndexRowHint();
  return options;
}

absl::Status RecordStore::CommitIndexChange(uint32_t cid, const IndexChange& change, bool sync) {
  rocksdb::WriteBatch batch;
  for (const PostingRow& row : change.put) {
    batch.Put(index_, IndexRowKey(cid, kIndexPosting, row.posting), EncodePostingRow(row));
  }
  for (uint32_t p : change.removed) batch.Delete(index_, IndexRowKey(cid, kIndexPosting, p));
  for (uint64_t iid : change.erase_tombstones) {
    batch.Delete(index_, IndexRowKey(cid, kIndexStale, iid));
  }
  if (change.indexed_below != 0) {
    std::string watermark;
    PutFixed64BE(&watermark, change.indexed_below);
    batch.Put(index_, IndexRowKey(cid, kIndexWatermark), watermark);
  }
  // Through Write: after a failed commit stopped RocksDB's writes, the maintenance thread's
  // retry resumes them once the fault clears, as a client write would.
  return Write(&batch, sync, "committing index change");
}

absl::Status RecordStore::ClearIndex(uint32_t cid) {
  const std::string begin = CollectionPrefix(cid);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(index_, begin, PrefixUpperBound(begin));
  return Write(&batch, /*sync=*/true, "clearing index");
}

absl::StatusOr<std::optional<StoredIndex>> RecordStore::LoadIndex(uint32_t cid) {
  StoredIndex out;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), index_, IndexRowKey(cid, kIndexManifest), &out.manifest);
  if (s.IsNotFound()) return std::optional<StoredIndex>();
  if (!s.ok()) return FromRocks(s, "reading index manifest");
  const std::string begin = CollectionPrefix(cid);
  const std::string end = PrefixUpperBound(begin);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, index_));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView();
    std::string_view value = it->value().ToStringView();
    const char kind = key.size() > 4 ? key[4] : 0;
    if (kind == kIndexPosting && key.size() == 9 &&
        (value.size() == 20 || (value.size() >= 24 && value.size() % 4 == 0))) {
      PostingRow row;
      row.posting = GetFixed32BE(key.data() + 5);
      row.first_page = GetFixed64BE(value.data());
      row.num_pages = GetFixed32BE(value.data() + 8);
      row.bytes = GetFixed32BE(value.data() + 12);
      row.count = GetFixed32BE(value.data() + 16);
      if (value.size() >= 24) {
        row.origin = GetFixed32BE(value.data() + 20);
        for (size_t o = 24; o < value.size(); o += 4) {
          const uint32_t bits = GetFixed32BE(value.data() + o);
          float f;
          std::memcpy(&f, &bits, 4);
          row.centroid.push_back(f);
        }
      }
      out.postings.push_back(std::move(row));
    } else if (kind == kIndexWatermark && key.size() == 5 && value.size() == 8) {
      out.indexed_below = GetFixed64BE(value.data());
    } else if (kind == kIndexStale && key.size() == 13) {
      out.stale_ids.push_back(GetFixed64BE(key.data() + 5));
    } else if (kind != kIndexManifest) {
      return absl::DataLossError(absl::StrCat("index row of collection ", cid, " is corrupt (",
                                              key.size(), "-byte key, ", value.size(),
                                              "-byte value)"));
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning index");
  return std::optional<StoredIndex>(std::move(out));
}

}  // namespace shoal::storage
