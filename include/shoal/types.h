// Value types of Shoal's public embedded API: keys, attributes, records, search hits,
// collection schemas. Plain structs of std types; copyable; no thread-safety concerns of their own.
#ifndef SHOAL_TYPES_H_
#define SHOAL_TYPES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace shoal {

// A record's external key: a uint64 or a string (1..kMaxKeyBytes bytes). The two kinds live in
// separate spaces: 7 and "7" are different keys.
using Key = std::variant<uint64_t, std::string>;
inline constexpr size_t kMaxKeyBytes = 1024;

// A typed scalar attribute value.
using AttributeValue = std::variant<int64_t, double, bool, std::string>;

// Distance function of a collection. Search returns a `distance` where smaller is closer:
//   kL2           squared Euclidean distance
//   kInnerProduct negative inner product (-<q, x>)
//   kCosine       1 - cos(q, x)
// Every written and query vector must be finite with a squared norm of at most 1e28 (so that no
// distance overflows float); under kCosine its norm must also be at least ~1.1e-19 (sqrt of
// FLT_MIN: smaller ones cannot be normalised). Others are InvalidArgument naming the field.
enum class Metric { kL2 = 0, kInnerProduct = 1, kCosine = 2 };

// "l2", "ip", "cosine" (also "inner_product", "euclidean", "angular").
std::optional<Metric> ParseMetric(const std::string& name);
const char* MetricName(Metric metric);

inline constexpr uint32_t kMaxDimension = 65536;
inline constexpr size_t kMaxNameBytes = 64;

// What a collection is. Names match [A-Za-z_][A-Za-z0-9_-]{0,63}. Cluster mode (shoald
// --cluster-etcd) names each node's local copy of shard S "<name>@S"; the embedded DB accepts
// that form too.
struct CollectionSpec {
  std::string name;
  uint32_t dimension = 0;  // 1..kMaxDimension
  Metric metric = Metric::kL2;
  // Cluster mode only: records spread over `shards` shards by key hash, each kept by
  // `replication` nodes. 0 and 0 = not sharded (the only form the embedded DB accepts; other
  // values are InvalidArgument naming the field).
  uint32_t shards = 0;
  uint32_t replication = 0;
};

struct CollectionInfo {
  CollectionSpec spec;
  uint64_t num_vectors = 0;
  // The index serving searches: "flat" (exact), or the spec it was built from, e.g.
  // "spann:centroid_ratio=0.02,replicas=4".
  std::string index = "flat";
  // RAM held by the index: vectors or centroids, navigator, caches (not RocksDB's own cache).
  uint64_t index_ram_bytes = 0;
  // Of index_ram_bytes, what the tenants hold: the access table, their sub-trees (with the ids by
  // leaf that searches made, tenants/tenant_tree.h) and their entries.
  uint64_t tenant_ram_bytes = 0;
  // Records not yet in the SSD index's posting lists (searched exactly beside the index until
  // background maintenance moves them in, or the next build).
  uint64_t unindexed_vectors = 0;
  // Aliases that resolve to this collection, sorted (filled by DB, not by Collection).
  std::vector<std::string> aliases;
  // SSD index: ids deleted or replaced that some posting list may still hold (skipped by
  // searches, removed by the next sweep).
  uint64_t tombstones = 0;
  // SSD index: live posting lists, and what online updates did since the index was opened or
  // built: postings split and merged, vectors moved between postings.
  uint64_t postings = 0;
  uint64_t posting_splits = 0;
  uint64_t posting_merges = 0;
  uint64_t vectors_reassigned = 0;
  // Times the index's vector file was rewritten without its dead slots.
  uint64_t vector_file_compactions = 0;
  // Posting writes that appended the new entries after the posting instead of rewriting it, and
  // posting-file bytes written by online updates (appends and rewrites).
  uint64_t posting_appends = 0;
  uint64_t posting_bytes_written = 0;
  // Empty for a collection that serves. Otherwise why it could not be opened (a damaged or
  // missing index file, a record that does not decode): it is quarantined while the others
  // serve; every call on it but Describe/List is DataLoss; DropCollection removes it and
  // BuildIndex rebuilds its index from its records.
  std::string damage;
};

// A complete snapshot made by DB::Snapshot (the directory's name, its files and their bytes,
// when it was completed).
struct SnapshotInfo {
  std::string name;
  uint64_t files = 0;
  uint64_t bytes = 0;
  int64_t created_unix_seconds = 0;
};

// An alias and the collection (real name) it resolves to.
struct AliasInfo {
  std::string alias;
  std::string collection;
  friend bool operator==(const AliasInfo&, const AliasInfo&) = default;
};

// One vector with its key and attributes. Upsert replaces the whole record of an existing key.
struct Record {
  Key key;
  std::vector<float> vector;                         // exactly `dimension` finite floats
  std::map<std::string, AttributeValue> attributes;  // names as collection names
  std::vector<std::string> tags;                     // string tags (set membership)
};

// How far a running DB::BuildIndex is. Phases in order: "reading" (the vectors, from RocksDB),
// "clustering" (the centroid tree), "assigning" (each vector's postings), "encoding" (quantizer
// training, quantized tiers only), "writing" (posting and vector files, synced), "calibrating"
// (max_postings per target recall, on sampled vectors), "committing";
// `fraction` (0..1) is of the whole build and never decreases.
struct IndexBuildProgress {
  std::string phase;
  double fraction = 0;
};
using IndexBuildProgressFn = std::function<void(const IndexBuildProgress&)>;

// What a search did, summed over its queries (filled when SearchParams::stats is set).
struct SearchStats {
  uint64_t postings_read = 0;      // posting lists scanned
  uint64_t vectors_scored = 0;     // exact distances computed (duplicates from replicas included)
  uint64_t bytes_read = 0;         // bytes read from the SSD (cache hits excluded)
  uint64_t cache_hits = 0;         // postings (or, quantized, full vectors) served from RAM caches
  uint64_t full_vectors_read = 0;  // quantized tier: full vectors fetched for exact rerank
  uint64_t read_batches = 0;       // batches of SSD reads waited for (a query's round trips)
  // Why the filter may not do what was meant: an attribute or tag no record has, or a value of a
  // type the attribute never holds. Such a leaf matches nothing (it is not an error: records
  // need not share attributes).
  std::vector<std::string> warnings;
};

struct Filter;  // shoal/filter.h

// Cluster mode (shoald --cluster-etcd): how fresh a read must be. A single node ignores it
// (every acknowledged write is already visible there).
struct ReadConsistency {
  // true: the replica that answers has first applied every write of the shard acknowledged
  // before the read began (read-your-writes, and everyone else's).
  bool read_your_writes = false;
  // Node to node: the shard stream sequence the answering replica must have applied. 0 = none.
  uint64_t min_applied_sequence = 0;
};

// Per-request search parameters.
struct SearchParams {
  uint32_t k = 10;  // 1..Options::max_k
  // SSD-index knobs; the exact (flat) index ignores them. 0 = the index's default.
  uint32_t max_postings = 0;  // scan at most this many nearest postings (experts)
  // With max_postings 0: scan the fewest postings that reached this recall@10 when the index
  // was built and calibrated (0..1; 0 = the index's default target, 0.95 unless its spec says
  // otherwise). An index built before calibration existed uses its spec's max_postings.
  float target_recall = 0;
  // Scan posting i only if dist_i <= pruning_ratio * dist_1 (>= 1). 0 = the index's default: a
  // search by target recall (max_postings 0) then takes the pruning, if any, that reached its
  // target with the fewest postings scanned in the build's calibration.
  float pruning_ratio = 0;
  SearchStats* stats = nullptr;  // optional out-parameter, not owned
  // Optional (not owned; shoal/filter.h): only records that pass it are scored and returned.
  // nullptr = every record.
  const Filter* filter = nullptr;
  // "" = every record; otherwise only records this tenant owns or was granted are scored and
  // returned (the tenant's sub-tree of the index is searched; shoal/tenants.h). NotFound for an
  // unknown tenant; its max_searches_per_second quota applies.
  std::string tenant;
  // Fill Hit::attributes and Hit::tags / Hit::vector. Read once the top-k is known, in one
  // batched read of the hits' records (never per scored candidate). A hit whose record was
  // deleted while the search ran is left out.
  bool with_attributes = false;
  bool with_vectors = false;
  ReadConsistency consistency;  // cluster mode only
};

struct Hit {
  Key key;
  float distance = 0;  // smaller is closer; see Metric
  // Only with SearchParams::with_attributes / with_vectors; empty otherwise.
  std::map<std::string, AttributeValue> attributes;
  std::vector<std::string> tags;
  std::vector<float> vector;  // as written (not normalised)
  friend bool operator==(const Hit&, const Hit&) = default;
};

// ---- Scroll (DB::Scroll) ----

inline constexpr uint32_t kMaxScrollLimit = 10000;
// Records per atomic batch of DB::DeleteByFilter.
inline constexpr size_t kDeleteByFilterBatch = 1024;

struct ScrollOptions {
  uint32_t limit = 100;    // records per page, 1..kMaxScrollLimit
  std::string page_token;  // "" = from the first key; else a ScrollPage::next_page_token
  bool with_vectors = false;
  bool with_attributes = true;  // attributes and tags
};

// One page of records in key order (uint64 keys ascending, then string keys by bytes).
struct ScrollPage {
  std::vector<Record> records;
  // Pass it back as ScrollOptions::page_token for the next page; "" = nothing follows. A page
  // may hold fewer than `limit` records (even none) while a token follows: keep going until the
  // token is "".
  std::string next_page_token;
};

}  // namespace shoal

#endif  // SHOAL_TYPES_H_
