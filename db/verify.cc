// Verification (include/shoal/verify.h), the one place it lives: Checker reads everything
// durable of a collection once; VerifyDatabase runs it offline (no DB::Open), Collection::Verify
// runs it on an open collection and adds the in-memory state. A new durable structure adds its
// check here.
#include "shoal/verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache/cache_verify.h"
#include "db/collection.h"
#include "db/db_impl.h"
#include "db/snapshot.h"
#include "db/validation.h"
#include "db/verify_tenants.h"
#include "index/postings/posting_entries.h"
#include "index/spann/spann_builder.h"
#include "index/spann/spann_index.h"
#include "index/spann/spann_options.h"
#include "storage/io/file_system.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"
#include "storage/records/record_store.h"

namespace shoal {
namespace db {
namespace {

std::string KeyString(const Key& key) {
  if (const auto* n = std::get_if<uint64_t>(&key)) return absl::StrCat(*n);
  return absl::StrCat("\"", std::get<std::string>(key), "\"");
}

size_t VectorHash(const float* v, size_t dim) {
  return std::hash<std::string_view>()(
      std::string_view(reinterpret_cast<const char*>(v), dim * sizeof(float)));
}

// The ids a posting payload holds (full-vector or quantized layout).
absl::Status PostingIds(std::span<const uint8_t> payload, bool quantized, size_t dim,
                        const std::string& where, std::vector<uint64_t>* ids) {
  if (!quantized) {
    index::DecodedPosting p;
    SHOAL_RETURN_IF_ERROR(index::DecodePostingEntries(payload, dim, where, &p));
    *ids = std::move(p.ids);
    return absl::OkStatus();
  }
  if (payload.size() < 8) return absl::DataLossError(absl::StrCat(where, ": short payload"));
  uint32_t field = 0;
  std::memcpy(&field, payload.data() + 4, 4);
  index::QuantizedPosting q;
  SHOAL_RETURN_IF_ERROR(index::DecodeQuantizedEntries(payload, field & index::kSegmentCodeBytes,
                                                      /*norms=*/false, where, &q));
  *ids = std::move(q.ids);
  return absl::OkStatus();
}

}  // namespace

// What the durable check saw of one collection, for the in-memory checks that follow.
struct DurableView {
  absl::flat_hash_map<uint64_t, Key> record_key;  // every record: id -> key
  absl::flat_hash_set<uint64_t> stale;            // stored stale marks
  bool has_index = false;
  uint64_t generation = 0;
  uint64_t indexed_below = 0;
  TenantRowsView tenants;  // owner and grant rows (verify_tenants.h)
  bool InIndex(uint64_t iid) const { return has_index && iid < indexed_below; }
};

class Checker {
 public:
  Checker(storage::RecordStore* store, std::string index_root, VerifyReport* report)
      : store_(store), index_root_(std::move(index_root)), report_(report) {}

  absl::Status Collection(const storage::StoredCollection& meta, DurableView* view) {
    c_ = &report_->collections.emplace_back();
    c_->spec = meta.spec;
    vector_hash_.clear();
    unreadable_postings_ = 0;
    where_ = absl::StrCat("collection '", meta.spec.name, "'");
    Records(meta, view);
    Index(meta, view);
    SHOAL_RETURN_IF_ERROR(CheckTenantRows(
        store_, meta.id, view->record_key, [this](std::string p) { Problem(std::move(p)); },
        &view->tenants));
    for (const auto& [iid, key] : view->record_key) {
      if (view->InIndex(iid) && !view->stale.contains(iid)) continue;
      ++c_->vectors_in_delta;
    }
    return absl::OkStatus();
  }

  void Problem(std::string text) {
    if (report_->problems.size() < VerifyReport::kMaxProblems) {
      report_->problems.push_back(absl::StrCat(where_, " ", text));
    } else {
      ++report_->problems_not_listed;
    }
  }

 private:
  // Records decode with their shape, key map <-> records.
  void Records(const storage::StoredCollection& meta, DurableView* view) {
    std::vector<float> scratch;
    absl::Status scan = store_->ScanRecords(meta.id, [&](uint64_t iid, Record&& r) {
      ++c_->records;
      view->record_key.emplace(iid, r.key);
      const std::string what = absl::StrCat("record ", iid, " (key ", KeyString(r.key), ")");
      if (r.vector.size() != meta.spec.dimension) {
        Problem(absl::StrCat(what, ": ", r.vector.size(), " floats, want ", meta.spec.dimension));
        return absl::OkStatus();
      }
      // A vector the write path would reject now (written before a rule existed, or damaged)
      // cannot be searched correctly: non-finite values, or distances that overflow.
      if (absl::Status s = ValidateVector(meta.spec, r.vector, "vector"); !s.ok()) {
        Problem(absl::StrCat(what, ": ", s.message()));
      }
      if (iid >= meta.next_internal_id) {
        Problem(absl::StrCat(what, ": at or above the id counter ", meta.next_internal_id));
      }
      vector_hash_[iid] =
          VectorHash(IndexForm(meta.spec.metric, r.vector, &scratch), meta.spec.dimension);
      return absl::OkStatus();
    });
    if (!scan.ok()) Problem(std::string(scan.message()));
    absl::Status keys = store_->ScanKeys(meta.id, [&](Key&& key, uint64_t iid) {
      ++c_->keys;
      auto it = view->record_key.find(iid);
      if (it == view->record_key.end()) {
        Problem(absl::StrCat("key map: key ", KeyString(key), " points at missing record ", iid));
      } else if (it->second != key) {
        Problem(absl::StrCat("key map: key ", KeyString(key), " points at record ", iid,
                             ", which holds key ", KeyString(it->second)));
      }
      return absl::OkStatus();
    });
    if (!keys.ok()) Problem(absl::StrCat("key map: ", keys.message()));
    if (scan.ok() && keys.ok() && c_->keys != c_->records) {
      Problem(absl::StrCat("has ", c_->records, " records but ", c_->keys, " keys"));
    }
  }

  void Index(const storage::StoredCollection& meta, DurableView* view) {
    absl::StatusOr<std::optional<storage::StoredIndex>> stored = store_->LoadIndex(meta.id);
    if (!stored.ok()) return Problem(absl::StrCat("index: ", stored.status().message()));
    if (!stored->has_value()) return;
    const storage::StoredIndex& s = **stored;
    absl::StatusOr<index::SpannManifest> manifest =
        index::DecodeManifest(s.manifest, absl::StrCat(where_, " index manifest"));
    if (!manifest.ok()) return Problem(std::string(manifest.status().message()));
    view->has_index = true;
    view->generation = manifest->generation;
    // Online updates advance the watermark past the build's (ids below it are in postings).
    view->indexed_below = std::max(manifest->indexed_below, s.indexed_below);
    view->stale.insert(s.stale_ids.begin(), s.stale_ids.end());
    c_->stale_marks = view->stale.size();
    c_->index = absl::StrCat("spann generation ", manifest->generation);
    const std::string dir = absl::StrCat(index_root_, "/c", meta.id, ".g", manifest->generation);
    // Open checks the centroid tree's checksum, the posting directory and the quantizer.
    index::SpannRuntimeOptions runtime{storage::IoBackend::kPread, 0};
    absl::StatusOr<std::unique_ptr<index::SpannIndex>> opened =
        index::SpannIndex::Open(dir, *manifest, s.postings, runtime);
    if (!opened.ok()) return Problem(absl::StrCat("index: ", opened.status().message()));
    absl::flat_hash_set<uint64_t> in_postings;
    Postings(dir, *manifest, s.postings, &in_postings);
    Reachability(*view, in_postings);
    Vectors(dir, *manifest, *view);
  }

  // Every page of every posting list (checksum, owner, sequence, payload size); the ids held.
  void Postings(const std::string& dir, const index::SpannManifest& m,
                const std::vector<storage::PostingRow>& rows,
                absl::flat_hash_set<uint64_t>* in_postings) {
    const std::string path = absl::StrCat(dir, "/", index::kPostingFileName);
    auto reader = storage::BlockReader::Open(path, storage::IoBackend::kPread);
    if (!reader.ok()) return Problem(absl::StrCat("index: ", reader.status().message()));
    std::vector<storage::ReadRequest> requests;
    for (const storage::PostingRow& r : rows) {
      requests.push_back(storage::ExtentRequest({r.first_page, r.num_pages, r.bytes}));
    }
    const bool quantized = m.options.quant != "none";
    std::vector<uint8_t> payload;
    std::vector<uint64_t> ids;
    absl::Status read = (*reader)->ReadBatch(requests, [&](size_t i, std::span<const uint8_t> b) {
      payload.clear();
      const storage::PostingRow& r = rows[i];
      const std::string where = absl::StrCat("index posting ", r.posting);
      absl::Status s = storage::DecodePosting(b, {r.first_page, r.num_pages, r.bytes}, r.posting,
                                              path, &payload);
      if (s.ok()) s = PostingIds(payload, quantized, m.dimension, path, &ids);
      if (!s.ok()) {
        Problem(absl::StrCat(where, ": ", s.message()));
        ++unreadable_postings_;
        return absl::OkStatus();
      }
      ++c_->index_postings;
      c_->index_bytes += b.size();
      if (ids.size() != r.count) {
        Problem(absl::StrCat(where, ": ", ids.size(), " entries, its row says ", r.count));
      }
      // (An id at or above the watermark may be in a posting: the watermark is conservative
      // while a writer commits beside a drain; reachability below checks every posting id.)
      in_postings->insert(ids.begin(), ids.end());
      return absl::OkStatus();
    });
    if (!read.ok()) {
      Problem(absl::StrCat("index: ", read.message()));
      ++unreadable_postings_;
    }
  }

  // Each live indexed vector is in a posting; each posting id is live or marked stale, so a
  // search never returns a deleted record or an old vector.
  void Reachability(const DurableView& view, const absl::flat_hash_set<uint64_t>& in_postings) {
    for (const auto& [iid, key] : view.record_key) {
      if (!view.InIndex(iid) || view.stale.contains(iid)) continue;
      if (in_postings.contains(iid)) {
        ++c_->vectors_in_postings;
      } else if (unreadable_postings_ == 0) {  // else already reported: the ids are unknown
        Problem(absl::StrCat("record ", iid, " (key ", KeyString(key),
                             ") is indexed and not stale but in no posting: unreachable"));
      }
    }
    std::vector<uint64_t> unexpected;
    for (uint64_t id : in_postings) {
      if (!view.stale.contains(id) && !view.record_key.contains(id)) unexpected.push_back(id);
    }
    std::sort(unexpected.begin(), unexpected.end());
    for (uint64_t id : unexpected) {
      Problem(absl::StrCat("index: posting id ", id,
                           " is a deleted record without a stale mark (search could return it)"));
    }
  }

  // The vector file's copy of every record the index holds equals the record (index form).
  void Vectors(const std::string& dir, const index::SpannManifest& m, const DurableView& view) {
    const std::string path = absl::StrCat(dir, "/", index::kVectorFileName);
    auto file = storage::VectorFile::Open(path, m.dimension, storage::IoBackend::kPread);
    if (!file.ok()) return Problem(absl::StrCat("index: ", file.status().message()));
    std::vector<uint64_t> indexed;
    for (const auto& [iid, key] : view.record_key) {
      if (view.InIndex(iid) && !view.stale.contains(iid)) indexed.push_back(iid);
    }
    std::sort(indexed.begin(), indexed.end());
    absl::Status read = (*file)->ReadBatch(indexed, [&](size_t i, const float* v) {
      ++c_->index_vectors;
      auto h = vector_hash_.find(indexed[i]);
      if (h != vector_hash_.end() && h->second != VectorHash(v, m.dimension)) {
        Problem(absl::StrCat(path, ": vector ", indexed[i], " differs from its record"));
      }
      return absl::OkStatus();
    });
    if (!read.ok()) Problem(absl::StrCat("index: ", read.message()));
    c_->index_bytes += (*file)->bytes_read();
  }

  storage::RecordStore* store_;
  const std::string index_root_;
  VerifyReport* report_;
  VerifyReport::CollectionReport* c_ = nullptr;
  std::string where_;
  absl::flat_hash_map<uint64_t, size_t> vector_hash_;  // record id -> hash of its index form
  uint64_t unreadable_postings_ = 0;                   // of the current collection
};

absl::Status Collection::Verify(VerifyReport* report) {
  auto idle = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.empty(); };
  absl::MutexLock write_lock(&write_mu_, absl::Condition(&idle));
  // Background index maintenance holds still. Buffered writes are moved into the postings first
  // (best effort: a failing drain changes nothing), so the watermark is exact: one that ran
  // beside a committing writer left it below ids it already moved.
  IndexMaintainer::WorkClaim work(&maintainer_);
  maintainer_.DrainNow();
  absl::ReaderMutexLock lock(&state_.mu);
  Checker checker(store_, lifecycle_.index_root(), report);
  DurableView view;
  SHOAL_RETURN_IF_ERROR(
      checker.Collection(storage::StoredCollection{id_, spec_, next_internal_id_}, &view));
  // The in-memory state that answers queries agrees with the durable one.
  for (const auto& [iid, key] : view.record_key) {
    const uint64_t* mem = state_.id_of.Find(key);
    if (mem == nullptr || *mem != iid) {
      checker.Problem(absl::StrCat(
          "in memory: key ", KeyString(key), " of record ", iid,
          mem == nullptr ? std::string(" is missing") : absl::StrCat(" maps to ", *mem)));
    }
    const bool indexed = state_.InSpann(iid) && !state_.stale.Contains(iid);
    if (!indexed && !state_.buffer.Contains(iid)) {
      checker.Problem(
          absl::StrCat("in memory: record ", iid, " is neither indexed nor in the delta"));
    }
  }
  const VerifyReport::CollectionReport& c = report->collections.back();
  if (state_.id_of.size() != c.records || state_.key_of.size() != c.records) {
    checker.Problem(absl::StrCat("in memory: ", state_.id_of.size(), " / ", state_.key_of.size(),
                                 " keys for ", c.records, " records"));
  }
  if (state_.buffer.size() != c.vectors_in_delta) {
    checker.Problem(absl::StrCat("in memory: the delta holds ", state_.buffer.size(),
                                 " vectors, not ", c.vectors_in_delta));
  }
  const uint64_t generation = state_.spann ? state_.spann->manifest().generation : 0;
  if (view.has_index != (state_.spann != nullptr) ||
      (view.has_index && generation != view.generation)) {
    checker.Problem(absl::StrCat("in memory: index generation ", generation, ", stored ",
                                 view.has_index ? view.generation : 0));
  }
  const bool same_stale = state_.stale.size() == view.stale.size() &&
                          std::all_of(view.stale.begin(), view.stale.end(),
                                      [&](uint64_t iid) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                        return state_.stale.Contains(iid);
                                      });
  if (!same_stale) {
    checker.Problem(absl::StrCat("in memory: ", state_.stale.size(), " stale marks, stored ",
                                 view.stale.size(), " (or different ids)"));
  }
  const ProblemFn problem = [&](std::string p) { checker.Problem(std::move(p)); };
  CheckAccessTable(state_.access, view.tenants, problem);
  CheckTenantTree(state_.tenant_tree, state_.access, view.tenants, problem);
  return absl::OkStatus();
}

namespace {

// The semantic caches' rows (cache/cache_verify.h) into *report.
absl::Status VerifyCaches(storage::RecordStore* store, VerifyReport* report) {
  std::vector<std::string> problems;
  cache::CacheVerifyCounts counts;
  SHOAL_RETURN_IF_ERROR(cache::VerifyCacheRows(store, &problems, &counts));
  report->caches += counts.caches;
  report->cache_entries += counts.entries;
  for (std::string& p : problems) {
    if (report->problems.size() < VerifyReport::kMaxProblems) {
      report->problems.push_back(std::move(p));
    } else {
      ++report->problems_not_listed;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DBImpl::Verify(std::string_view collection, VerifyReport* report) {
  std::vector<std::shared_ptr<Collection>> targets;
  if (!collection.empty()) {
    SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
    targets.push_back(std::move(c));
  } else {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : collections_) targets.push_back(c);
    std::sort(targets.begin(), targets.end(),
              [](const auto& a, const auto& b) { return a->spec().name < b->spec().name; });
  }
  for (const auto& c : targets) SHOAL_RETURN_IF_ERROR(c->Verify(report));
  if (collection.empty()) SHOAL_RETURN_IF_ERROR(VerifyCaches(store_.get(), report));
  if (report->ok()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("verify found ",
                                          report->problems.size() + report->problems_not_listed,
                                          " problem(s); the first: ", report->problems.front()));
}

}  // namespace db

namespace {

// Offline tools never write into the directory they inspect (a read-write RocksDB open writes a
// WAL, MANIFEST and OPTIONS file, and deletes SSTs a damaged MANIFEST does not name).
// The directory as the next Open will see it (db/snapshot.h: a pending restore's parts).
absl::StatusOr<std::unique_ptr<storage::RecordStore>> OpenReadOnly(const std::string& path,
                                                                   db::DatabaseLayout* layout) {
  *layout = db::LayoutAfterPendingRestore(*storage::FileSystem::Default(), path);
  if (!storage::FileSystem::Default()->Stat(layout->rocksdb_dir).ok()) {
    return absl::NotFoundError(absl::StrCat(path, ": not a Shoal data directory (no rocksdb/)"));
  }
  return storage::RecordStore::Open(layout->rocksdb_dir,
                                    {.create_if_missing = false, .read_only = true});
}

}  // namespace

absl::StatusOr<std::vector<CollectionInfo>> DescribeDatabase(const std::string& path) {
  db::DatabaseLayout layout;
  SHOAL_ASSIGN_OR_RETURN(auto store, OpenReadOnly(path, &layout));
  SHOAL_ASSIGN_OR_RETURN(std::vector<storage::StoredCollection> catalog, store->LoadCatalog());
  std::vector<CollectionInfo> out;
  for (const storage::StoredCollection& meta : catalog) {
    CollectionInfo& info = out.emplace_back();
    info.spec = meta.spec;
    SHOAL_RETURN_IF_ERROR(store->ScanKeys(meta.id, [&](Key&&, uint64_t) {
      ++info.num_vectors;
      return absl::OkStatus();
    }));
    SHOAL_ASSIGN_OR_RETURN(std::optional<storage::StoredIndex> stored, store->LoadIndex(meta.id));
    info.index = "flat";
    if (stored.has_value()) {
      SHOAL_ASSIGN_OR_RETURN(index::SpannManifest manifest,
                             index::DecodeManifest(stored->manifest, meta.spec.name));
      info.index = index::SpannSpecString(manifest.options);
    }
  }
  return out;
}

absl::StatusOr<VerifyReport> VerifyDatabase(const std::string& path) {
  db::DatabaseLayout layout;
  SHOAL_ASSIGN_OR_RETURN(auto store, OpenReadOnly(path, &layout));
  SHOAL_ASSIGN_OR_RETURN(std::vector<storage::StoredCollection> catalog, store->LoadCatalog());
  VerifyReport report;
  if (!layout.note.empty()) report.notes.push_back(layout.note);
  SHOAL_ASSIGN_OR_RETURN(auto unreferenced, store->UnreferencedTableFiles());
  for (const storage::RecordStore::UnreferencedTable& table : unreferenced) {
    // A crash mid-flush or mid-compaction leaves such files behind; the next start removes them.
    if (table.harmless) continue;
    report.problems.push_back(absl::StrCat(
        "rocksdb/", table.name, " is not in RocksDB's MANIFEST and ", table.detail,
        ": the MANIFEST is damaged and lost it (do not start shoald: it would delete the file)"));
  }
  db::Checker checker(store.get(), layout.index_dir, &report);
  for (const storage::StoredCollection& meta : catalog) {
    db::DurableView view;
    SHOAL_RETURN_IF_ERROR(checker.Collection(meta, &view));
  }
  SHOAL_RETURN_IF_ERROR(db::VerifyCaches(store.get(), &report));
  return report;
}

}  // namespace shoal
