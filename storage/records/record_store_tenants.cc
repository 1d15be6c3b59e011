// RecordStore's tenant rows. They live in the catalog family (never under "collection/" or
// "alias/", so neither LoadCatalog nor LoadAliases sees them), all under one prefix per
// collection, so that DropCollection removes them with one range delete:
//
//   tenant/<cid:4> 'C'                      -> next tenant id (8 bytes, merged by max)
//   tenant/<cid:4> 'N' <name>               -> tenant row (EncodeTenant)
//   tenant/<cid:4> 'O' <tenant:4> <iid:8>   -> ""   the tenant owns the record `iid`
//   tenant/<cid:4> 'G' <tenant:4> <iid:8>   -> ""   the record `iid` was granted to the tenant
//
// Owner and grant rows are keyed tenant first: one tenant's ids are one contiguous range
// (counting, deleting or dropping by tenant reads or removes that range only, never the whole
// collection), and the id -> tenants direction is rebuilt in RAM from them at open
// (tenants/access_table.h). They are written in the same WriteBatch as the record rows they
// describe, so a crash never leaves a record without its owner row or the reverse.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/write_batch.h"
#include "storage/records/record_codec.h"
#include "storage/records/record_store.h"

namespace shoal::storage {
namespace {

enum : char { kNextTenantId = 'C', kTenantRow = 'N', kOwnerRow = 'O', kGrantRow = 'G' };
constexpr uint8_t kTenantRowVersion = 1;
constexpr size_t kTenantRowBytes = 1 + 4 + 1 + 8 + 8 + 8;

std::string RowKey(uint32_t cid, char kind) {
  std::string key = TenantRowPrefix(cid);
  key.push_back(kind);
  return key;
}

// An owner or grant row's key, built in place: a grant or revoke of one key allocates nothing
// for it.
class IdRowKey {
 public:
  IdRowKey(uint32_t cid, char kind, uint32_t tenant_id, uint64_t iid) {
    // TenantRowPrefix(cid) + kind + tenant id + internal id.
    static_assert(sizeof(kTenantRowPrefixText) - 1 + 4 + 1 + 4 + 8 == kBytes);
    char* p = std::copy_n(kTenantRowPrefixText, sizeof(kTenantRowPrefixText) - 1, bytes_);
    p = PutBE(p, cid, 4);
    *p++ = kind;
    p = PutBE(p, tenant_id, 4);
    PutBE(p, iid, 8);
  }
  rocksdb::Slice slice() const { return rocksdb::Slice(bytes_, kBytes); }

 private:
  static constexpr size_t kBytes = 24;
  static char* PutBE(char* p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) *p++ = static_cast<char>(v >> (8 * i));
    return p;
  }
  char bytes_[kBytes];
};

// The hint's group of an owner or grant row: its key less the internal id, i.e. (collection,
// kind, tenant). A batched grant's rows then go in one after the other from the same place, and
// a single grant searches the skip list's lower levels only, from its tenant's last row (RocksDB
// keeps one hint per group in each memtable, ~250 bytes; a write of several threads at once
// inserts without hints).
class IdRowHint final : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kGroupBytes = sizeof(kTenantRowPrefixText) - 1 + 4 + 1 + 4;
  const char* Name() const override { return "shoal.TenantIdRowHint"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), kGroupBytes);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    if (key.size() != kGroupBytes + 8 || !key.starts_with(kTenantRowPrefixText)) return false;
    const char kind = key[sizeof(kTenantRowPrefixText) - 1 + 4];
    return kind == kOwnerRow || kind == kGrantRow;
  }
};

std::string IdRowPrefix(uint32_t cid, char kind, uint32_t tenant_id) {
  std::string key = RowKey(cid, kind);
  PutFixed32BE(&key, tenant_id);
  return key;
}

// The first key after every key that starts with `prefix` (never all 0xff here: it starts with
// "tenant/"). A trailing 0xff carries into the byte before it: tenant id 255 ends in 0xff.
std::string AfterPrefix(std::string prefix) {
  while (static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

std::string EncodeTenant(const StoredTenant& t) {
  std::string out(1, static_cast<char>(kTenantRowVersion));
  PutFixed32BE(&out, t.id);
  out.push_back(static_cast<char>(t.state));
  PutFixed64BE(&out, t.quotas.max_vectors);
  PutFixed64BE(&out, t.quotas.max_bytes);
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(t.quotas.max_searches_per_second));
  std::memcpy(&bits, &t.quotas.max_searches_per_second, 8);
  PutFixed64BE(&out, bits);
  return out;
}

absl::StatusOr<StoredTenant> DecodeTenant(uint32_t cid, std::string_view name, std::string_view v) {
  if (v.size() != kTenantRowBytes || v[0] != kTenantRowVersion || static_cast<uint8_t>(v[5]) > 2) {
    return absl::DataLossError(absl::StrCat("tenant row '", std::string(name), "' of collection ",
                                            cid, " is corrupt (", v.size(), " bytes)"));
  }
  StoredTenant t;
  t.id = GetFixed32BE(v.data() + 1);
  t.name = std::string(name);
  t.state = static_cast<TenantState>(v[5]);
  t.quotas.max_vectors = GetFixed64BE(v.data() + 6);
  t.quotas.max_bytes = GetFixed64BE(v.data() + 14);
  const uint64_t bits = GetFixed64BE(v.data() + 22);
  std::memcpy(&t.quotas.max_searches_per_second, &bits, 8);
  return t;
}

std::string EncodeU64(uint64_t v) {
  std::string out;
  PutFixed64BE(&out, v);
  return out;
}

}  // namespace

std::shared_ptr<const rocksdb::SliceTransform> NewTenantIdRowHint() {
  return std::make_shared<IdRowHint>();
}

void RecordStore::Batch::PutTenant(uint32_t cid, const StoredTenant& tenant) {
  batch_->Put(store_->catalog_, RowKey(cid, kTenantRow) + tenant.name, EncodeTenant(tenant));
  batch_->Merge(store_->catalog_, RowKey(cid, kNextTenantId), EncodeU64(uint64_t{tenant.id} + 1));
  catalog_row_ = true;
}

void RecordStore::Batch::DeleteTenant(uint32_t cid, const StoredTenant& tenant) {
  batch_->Delete(store_->catalog_, RowKey(cid, kTenantRow) + tenant.name);
  catalog_row_ = true;
  for (char kind : {kOwnerRow, kGrantRow}) {
    const std::string begin = IdRowPrefix(cid, kind, tenant.id);
    batch_->DeleteRange(store_->catalog_, begin, AfterPrefix(begin));
  }
}

void RecordStore::Batch::PutOwner(uint32_t cid, uint32_t tenant_id, uint64_t iid) {
  batch_->Put(store_->catalog_, IdRowKey(cid, kOwnerRow, tenant_id, iid).slice(), rocksdb::Slice());
  catalog_row_ = true;
}

void RecordStore::Batch::DeleteOwner(uint32_t cid, uint32_t tenant_id, uint64_t iid) {
  batch_->Delete(store_->catalog_, IdRowKey(cid, kOwnerRow, tenant_id, iid).slice());
  catalog_row_ = true;
}

void RecordStore::Batch::PutGrant(uint32_t cid, uint32_t tenant_id, uint64_t iid) {
  batch_->Put(store_->catalog_, IdRowKey(cid, kGrantRow, tenant_id, iid).slice(), rocksdb::Slice());
  catalog_row_ = true;
}

void RecordStore::Batch::DeleteGrant(uint32_t cid, uint32_t tenant_id, uint64_t iid) {
  batch_->Delete(store_->catalog_, IdRowKey(cid, kGrantRow, tenant_id, iid).slice());
  catalog_row_ = true;
}

absl::StatusOr<StoredTenants> RecordStore::LoadTenants(uint32_t cid) {
  StoredTenants out;
  const std::string begin = TenantRowPrefix(cid);
  const std::string end = AfterPrefix(begin);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, catalog_));
  const size_t at = begin.size();  // the kind letter
  for (it->Seek(begin); it->Valid(); it->Next()) {
    const std::string_view key = it->key().ToStringView();
    const std::string_view value = it->value().ToStringView();
    const char kind = key.size() > at ? key[at] : 0;
    if (kind == kTenantRow && key.size() > at + 1) {
      auto t = DecodeTenant(cid, key.substr(at + 1), value);
      if (!t.ok()) return t.status();
      out.tenants.push_back(*std::move(t));
    } else if ((kind == kOwnerRow || kind == kGrantRow) && key.size() == at + 13) {
      auto& rows = kind == kOwnerRow ? out.owners : out.grants;
      rows.emplace_back(GetFixed32BE(key.data() + at + 1), GetFixed64BE(key.data() + at + 5));
    } else if (kind == kNextTenantId && key.size() == at + 1 && value.size() == 8) {
      out.next_tenant_id = static_cast<uint32_t>(GetFixed64BE(value.data()));
    } else {
      return absl::DataLossError(absl::StrCat("tenant row of collection ", cid, " is corrupt (",
                                              key.size(), "-byte key, ", value.size(),
                                              "-byte value)"));
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning tenants");
  for (const StoredTenant& t : out.tenants) {
    out.next_tenant_id = std::max(out.next_tenant_id, t.id + 1);
  }
  return out;
}

}  // namespace shoal::storage
