// PostingDirectory: one immutable version of a SpannIndex's posting set — where each posting's
// extent lies, its centroid, the build-time tree leaf it descends from, and (quantized tier) its
// ids and codes in RAM. A posting's centroid is the build tree's leaf centroid, read through a
// pointer into the CentroidTree (one copy of num_leaves x dim floats in RAM), until the updater
// re-centres it or the posting is new (a split); only those centroids are held by the directory
// itself. Searches take the current version as a shared_ptr (RCU-style) and read it without further
// locks; the updater (index/spann/spann_updater.h) builds the next version beside it and swaps it
// in whole, so a reader sees every posting of one version, never half of a change.
//
// Postings are numbered 0..size()-1: the build's tree leaves first (posting p = leaf p), then one
// new number per split. A merged-away posting stays as a dead slot (live(p) false).
//
// Extents replaced by a newer version are retired onto the older version (its RetiredExtents):
// they return to the free pool only once that version and every version older than it are gone
// (a reader may hold an old version longer than a newer one, and an extent unchanged across
// versions is read through all of them), and the updater retires them only after the RocksDB
// directory change that stops referencing them is durable.
//
// Thread safety: immutable once published (except `retire`'s contents, which only the updater
// sets, when it replaces the version). Copying is O(postings) pointer copies; codes are shared.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_DIRECTORY_H_
#define SHOAL_INDEX_POSTINGS_POSTING_DIRECTORY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "base/aligned_vector.h"
#include "index/clustering/centroid_tree.h"
#include "index/postings/posting_entries.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"
#include "storage/records/record_store.h"

namespace shoal::index {

// The extents a version stopped referencing when the next one replaced it. Each version owns
// its list, and each list holds the next version's list: a list (and its release) outlives its own
// version and every older one. Released through on_release when the last of those goes.
struct RetiredExtents {
  std::vector<storage::Extent> extents;
  std::function<void(const std::vector<storage::Extent>&)> on_release;
  std::shared_ptr<RetiredExtents> newer;
  ~RetiredExtents();
};

struct PostingDirectory {
  static constexpr uint32_t kTreeCentroid = UINT32_MAX;

  size_t dim = 0;
  // The tree's leaf centroids (CentroidTree::leaf_centroids(), num_leaves x dim): posting p's
  // centroid while own_slot[p] == kTreeCentroid (then p is a tree leaf). The tree must outlive
  // every version (the SpannIndex owns both).
  const float* tree_centroids = nullptr;
  std::vector<uint32_t> own_slot;  // by posting: kTreeCentroid, or its row of own_centroids
  base::AlignedVector<float> own_centroids;  // re-centred and new postings' centroids, rows of dim
  std::vector<storage::PostingRow> rows;     // by posting id (rows[p].posting == p)
  std::vector<uint64_t> serials;             // unique per written extent: the posting cache's key
  std::vector<uint32_t> origin;              // tree leaf each posting descends from
  std::vector<uint8_t> live;                 // 0 = merged away
  // Pages right after each posting's extent that the updater keeps free for appends to it (RAM
  // only: after a reopen they are free pages and the count is 0).
  std::vector<uint32_t> reserved;
  // Quantized tier: ids + codes of each posting when codes are resident in RAM (else null, as
  // for dead postings and the full-vector tier), and each centroid in the quantizer's prepared
  // form (PostingQuantizer::Prepare, prepared_dim floats per posting; prepared_dim = 0 and
  // `prepared` empty when that form is the centroid itself, or when the codes stay on the SSD:
  // the SpannIndex then prepares a centroid as it scans its posting).
  std::vector<std::shared_ptr<const QuantizedPosting>> codes;
  size_t prepared_dim = 0;
  base::AlignedVector<float> prepared;  // rows 64-byte aligned (RaBitQ: 64k floats per row)
  // Postings descending from each tree leaf (only consulted once some posting was split or
  // merged; before that posting p is leaf p).
  std::shared_ptr<const std::vector<std::vector<uint32_t>>> by_leaf;
  bool reshaped = false;   // some posting was split or merged since the build
  size_t codes_bytes = 0;  // RAM held by `codes`
  // Quantized tier: the vector file rerank reads (null in the full-vector tier). A vector-file
  // compaction publishes a version with the compacted file; the old file closes (and its
  // unlinked inode is freed) when the last version naming it is destroyed.
  std::shared_ptr<storage::VectorFile> vectors;

  // Filled when the next version replaces this one (SpannUpdater::Publish); never copied.
  std::shared_ptr<RetiredExtents> retire = std::make_shared<RetiredExtents>();

  size_t size() const { return rows.size(); }
  const float* centroid(uint32_t p) const {
    const uint32_t slot = own_slot[p];
    return slot == kTreeCentroid ? tree_centroids + size_t{p} * dim
                                 : own_centroids.data() + size_t{slot} * dim;
  }
  // Sets posting p's centroid (p < size(); own_slot sized): it gets its own row from now on.
  void SetCentroid(uint32_t p, const float* c);
  const float* prepared_centroid(uint32_t p) const {
    return prepared_dim == 0 ? centroid(p) : prepared.data() + size_t{p} * prepared_dim;
  }
  size_t MemoryBytes() const {
    return sizeof(*this) + own_slot.capacity() * 4 + own_centroids.capacity() * sizeof(float) +
           rows.capacity() * sizeof(storage::PostingRow) + serials.capacity() * 8 +
           origin.capacity() * 4 + live.capacity() + reserved.capacity() * 4 +
           codes.capacity() * 16 + codes_bytes + prepared.capacity() * sizeof(float);
  }
};

// A copy of `cur` to build the next version from: everything but `retire` (a fresh one).
std::shared_ptr<PostingDirectory> NextVersion(const PostingDirectory& cur);

// A fresh number for each extent written (process-wide, never 0).
uint64_t NextExtentSerial();

// The directory of an index as opened: posting rows from RocksDB over the build's tree. Postings
// 0..tree.num_leaves()-1 start as the tree's leaves; rows may re-centre them or add postings past
// them (splits); a missing row is a merged-away posting. DataLoss for a row whose centroid has the
// wrong dimension or whose origin is not a tree leaf, or a duplicated posting.
absl::StatusOr<std::shared_ptr<PostingDirectory>> InitialDirectory(
    const CentroidTree& tree, std::span<const storage::PostingRow> rows);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_DIRECTORY_H_
