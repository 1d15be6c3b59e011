// VerifyDatabase (include/shoal/verify.h): reads everything durable once, without DB::Open, and
// reports what does not check out. The one place verification lives: a new durable structure
// adds its check here.
#include "shoal/verify.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/spann_builder.h"
#include "index/spann_index.h"
#include "index/spann_options.h"
#include "storage/posting_file.h"
#include "storage/record_store.h"
#include "storage/vector_file.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

class Checker {
 public:
  Checker(storage::RecordStore* store, std::string index_root, VerifyReport* report)
      : store_(store), index_root_(std::move(index_root)), report_(report) {}

  absl::Status Collection(const storage::StoredCollection& meta) {
    VerifyReport::CollectionReport& c = report_->collections.emplace_back();
    c.spec = meta.spec;
    const std::string where = absl::StrCat("collection '", meta.spec.name, "'");
    // Records: decode (ScanRecords fails with DataLoss on the first that does not), shape.
    std::set<uint64_t> ids;
    absl::Status scan = store_->ScanRecords(meta.id, [&](uint64_t iid, Record&& r) {
      ++c.records;
      ids.insert(iid);
      if (r.vector.size() != meta.spec.dimension) {
        Problem(absl::StrCat(where, " record ", iid, ": ", r.vector.size(), " floats, want ",
                             meta.spec.dimension));
      }
      for (size_t j = 0; j < r.vector.size(); ++j) {
        if (!std::isfinite(r.vector[j])) {
          Problem(absl::StrCat(where, " record ", iid, ": vector[", j, "] is not finite"));
          break;
        }
      }
      if (iid >= meta.next_internal_id) {
        Problem(absl::StrCat(where, " record ", iid, ": at or above the id counter ",
                             meta.next_internal_id));
      }
      return absl::OkStatus();
    });
    if (!scan.ok()) Problem(absl::StrCat(where, ": ", scan.message()));
    // Key map: each row points at an existing record that carries the same key.
    absl::Status keys = store_->ScanKeys(meta.id, [&](Key&& key, uint64_t iid) {
      ++c.keys;
      if (!ids.contains(iid)) {
        Problem(absl::StrCat(where, " key map: a key points at missing record ", iid));
        return absl::OkStatus();
      }
      absl::StatusOr<std::optional<Record>> r = store_->GetRecord(meta.id, iid);
      if (r.ok() && r->has_value() && (*r)->key != key) {
        Problem(absl::StrCat(where, " key map: record ", iid, " holds a different key"));
      }
      return absl::OkStatus();
    });
    if (!keys.ok()) Problem(absl::StrCat(where, " key map: ", keys.message()));
    if (scan.ok() && keys.ok() && c.keys != c.records) {
      Problem(absl::StrCat(where, ": ", c.records, " records but ", c.keys, " keys"));
    }
    return Index(meta, ids, &c);
  }

 private:
  void Problem(std::string text) {
    if (report_->problems.size() < VerifyReport::kMaxProblems) {
      report_->problems.push_back(std::move(text));
    } else {
      ++report_->problems_not_listed;
    }
  }

  absl::Status Index(const storage::StoredCollection& meta, const std::set<uint64_t>& ids,
                     VerifyReport::CollectionReport* c) {
    const std::string where = absl::StrCat("collection '", meta.spec.name, "' index");
    absl::StatusOr<std::optional<storage::StoredIndex>> stored = store_->LoadIndex(meta.id);
    if (!stored.ok()) {
      Problem(absl::StrCat(where, ": ", stored.status().message()));
      return absl::OkStatus();
    }
    if (!stored->has_value()) return absl::OkStatus();
    const storage::StoredIndex& s = **stored;
    absl::StatusOr<index::SpannManifest> manifest = index::DecodeManifest(s.manifest, where);
    if (!manifest.ok()) {
      Problem(std::string(manifest.status().message()));
      return absl::OkStatus();
    }
    c->index = absl::StrCat("spann generation ", manifest->generation);
    const std::string dir = absl::StrCat(index_root_, "/c", meta.id, ".g", manifest->generation);
    // Open checks the centroid tree's checksum, the posting directory and the quantizer.
    index::SpannRuntimeOptions runtime{storage::IoBackend::kPread, 0};
    absl::StatusOr<std::unique_ptr<index::SpannIndex>> opened =
        index::SpannIndex::Open(dir, *manifest, s.postings, runtime);
    if (!opened.ok()) {
      Problem(absl::StrCat(where, ": ", opened.status().message()));
      return absl::OkStatus();
    }
    Postings(dir, s.postings, where, c);
    Vectors(dir, *manifest, s, ids, where, c);
    return absl::OkStatus();
  }

  // Every page of every posting list: checksum, owner, sequence, payload size.
  void Postings(const std::string& dir, const std::vector<storage::PostingRow>& rows,
                const std::string& where, VerifyReport::CollectionReport* c) {
    const std::string path = absl::StrCat(dir, "/", index::kPostingFileName);
    auto reader = storage::BlockReader::Open(path, storage::IoBackend::kPread);
    if (!reader.ok()) {
      Problem(absl::StrCat(where, ": ", reader.status().message()));
      return;
    }
    std::vector<storage::ReadRequest> requests;
    for (const storage::PostingRow& r : rows) {
      requests.push_back(storage::ExtentRequest({r.first_page, r.num_pages, r.bytes}));
    }
    std::vector<uint8_t> payload;
    absl::Status read = (*reader)->ReadBatch(requests, [&](size_t i, std::span<const uint8_t> b) {
      payload.clear();
      const storage::PostingRow& r = rows[i];
      absl::Status s = storage::DecodePosting(b, {r.first_page, r.num_pages, r.bytes}, r.posting,
                                              path, &payload);
      if (!s.ok()) {
        Problem(absl::StrCat(where, " posting ", r.posting, ": ", s.message()));
      } else {
        ++c->index_postings;
        c->index_bytes += b.size();
      }
      return absl::OkStatus();
    });
    if (!read.ok()) Problem(absl::StrCat(where, ": ", read.message()));
  }

  // The vector file's copy of every record the index holds (built before it and not stale).
  void Vectors(const std::string& dir, const index::SpannManifest& manifest,
               const storage::StoredIndex& s, const std::set<uint64_t>& ids,
               const std::string& where, VerifyReport::CollectionReport* c) {
    const std::string path = absl::StrCat(dir, "/", index::kVectorFileName);
    auto file = storage::VectorFile::Open(path, manifest.dimension, storage::IoBackend::kPread);
    if (!file.ok()) {
      Problem(absl::StrCat(where, ": ", file.status().message()));
      return;
    }
    const absl::flat_hash_set<uint64_t> stale(s.stale_ids.begin(), s.stale_ids.end());
    std::vector<uint64_t> indexed;
    for (uint64_t iid : ids) {
      if (iid < manifest.indexed_below && !stale.contains(iid)) indexed.push_back(iid);
    }
    absl::Status read = (*file)->ReadBatch(indexed, [&](size_t, const float*) {
      ++c->index_vectors;
      return absl::OkStatus();
    });
    if (!read.ok()) Problem(absl::StrCat(where, ": ", read.message()));
    c->index_bytes += (*file)->bytes_read();
  }

  storage::RecordStore* store_;
  const std::string index_root_;
  VerifyReport* report_;
};

}  // namespace

absl::StatusOr<VerifyReport> VerifyDatabase(const std::string& path) {
  const fs::path rocks = fs::path(path) / "rocksdb";
  if (!fs::exists(rocks)) {
    return absl::NotFoundError(absl::StrCat(path, ": not a Shoal data directory (no rocksdb/)"));
  }
  SHOAL_ASSIGN_OR_RETURN(auto store,
                         storage::RecordStore::Open(rocks.string(), {.create_if_missing = false}));
  SHOAL_ASSIGN_OR_RETURN(std::vector<storage::StoredCollection> catalog, store->LoadCatalog());
  VerifyReport report;
  Checker checker(store.get(), (fs::path(path) / "index").string(), &report);
  for (const storage::StoredCollection& meta : catalog) {
    SHOAL_RETURN_IF_ERROR(checker.Collection(meta));
  }
  return report;
}

}  // namespace shoal
