#include "index/postings/posting_directory.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"

namespace shoal::index {

uint64_t NextExtentSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

RetiredExtents::~RetiredExtents() {
  if (on_release && !extents.empty()) on_release(extents);
  // Lists whose versions are gone die here one after another, not by recursion (a reader that
  // held an old version for long may leave a long chain).
  std::shared_ptr<RetiredExtents> next = std::move(newer);
  while (next != nullptr && next.use_count() == 1) {
    std::shared_ptr<RetiredExtents> after = std::move(next->newer);
    next.reset();
    next = std::move(after);
  }
}

void PostingDirectory::SetCentroid(uint32_t p, const float* c) {
  if (own_slot[p] == kTreeCentroid) {
    own_slot[p] = static_cast<uint32_t>(own_centroids.size() / dim);
    own_centroids.resize(own_centroids.size() + dim);
  }
  std::copy(c, c + dim, own_centroids.data() + size_t{own_slot[p]} * dim);
}

std::shared_ptr<PostingDirectory> NextVersion(const PostingDirectory& cur) {
  auto next = std::make_shared<PostingDirectory>();
  PostingDirectory& n = *next;
  n.dim = cur.dim;
  n.tree_centroids = cur.tree_centroids;
  n.own_slot = cur.own_slot;
  n.own_centroids = cur.own_centroids;
  n.rows = cur.rows;
  n.serials = cur.serials;
  n.origin = cur.origin;
  n.live = cur.live;
  n.reserved = cur.reserved;
  n.codes = cur.codes;
  n.prepared_dim = cur.prepared_dim;
  n.prepared = cur.prepared;
  n.by_leaf = cur.by_leaf;
  n.reshaped = cur.reshaped;
  n.codes_bytes = cur.codes_bytes;
  n.vectors = cur.vectors;
  return next;
}

absl::StatusOr<std::shared_ptr<PostingDirectory>> InitialDirectory(
    const CentroidTree& tree, std::span<const storage::PostingRow> rows) {
  auto dir = std::make_shared<PostingDirectory>();
  const size_t d = tree.dim();
  const size_t leaves = tree.num_leaves();
  uint32_t n = static_cast<uint32_t>(leaves);
  for (const auto& r : rows) n = std::max(n, r.posting + 1);
  dir->dim = d;
  dir->tree_centroids = tree.leaf_centroids();
  dir->own_slot.assign(n, PostingDirectory::kTreeCentroid);
  dir->rows.resize(n);
  dir->serials.resize(n);
  dir->origin.assign(n, UINT32_MAX);
  dir->live.assign(n, 0);
  dir->reserved.assign(n, 0);
  dir->codes.resize(n);
  for (const auto& r : rows) {
    const uint32_t p = r.posting;
    if (dir->live[p]) {
      return absl::DataLossError(absl::StrCat("posting directory: posting ", p, " twice"));
    }
    const uint32_t origin = r.origin != UINT32_MAX ? r.origin : p;
    if (origin >= leaves || (!r.centroid.empty() && r.centroid.size() != d) ||
        (r.centroid.empty() && p >= leaves)) {
      return absl::DataLossError(absl::StrCat("posting directory: posting ", p, " has origin ",
                                              origin, " and a centroid of ", r.centroid.size(),
                                              " floats (", leaves, " leaves, dim ", d, ")"));
    }
    dir->live[p] = 1;
    dir->origin[p] = origin;
    dir->rows[p] = r;
    dir->rows[p].centroid.clear();
    dir->serials[p] = NextExtentSerial();
    // A row may carry its posting's centroid even when it is the tree leaf's (rows the updater
    // wrote before it left those out).
    const bool own =
        !r.centroid.empty() && (p >= leaves || !std::equal(r.centroid.begin(), r.centroid.end(),
                                                           tree.leaf_centroids() + size_t{p} * d));
    if (own) dir->SetCentroid(p, r.centroid.data());
    if (origin != p || !r.centroid.empty()) dir->reshaped = true;
  }
  if (n != leaves || std::count(dir->live.begin(), dir->live.end(), 0) != 0) dir->reshaped = true;
  auto by_leaf = std::make_shared<std::vector<std::vector<uint32_t>>>(leaves);
  for (uint32_t p = 0; p < n; ++p) {
    if (dir->live[p]) (*by_leaf)[dir->origin[p]].push_back(p);
  }
  dir->by_leaf = std::move(by_leaf);
  return dir;
}

}  // namespace shoal::index
