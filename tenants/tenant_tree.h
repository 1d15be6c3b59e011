// TenantTree: each tenant's sub-tree of the SSD index's centroid tree (after Curator, VLDB'24).
// Per tenant and tree node it keeps how many of the tenant's vectors lie below the node (an
// exact filter: a node without a count holds none of them, so a descent prunes it). The
// tenant's shortlists — its ids at the highest node of each path where it is sparse (at most
// `cap` of its vectors below) — follow from those counts and its ids, which the access table
// holds: they are made when asked for, not stored (a leaf with more than `cap` of them is
// "dense", its postings scanned with access checks). So a shortlist never outgrows the cap and
// never needs a split or merge: counts are all a grant, revoke, insert or delete changes.
//
//   tenants::TenantTree tree(spann.tree(), &access, /*cap=*/128);
//   access.Grant(id, tenant);
//   tree.Attach(tenant, id, leaf);          // insert or grant: after the access table's change
//   tree.Detach(tenant, id);                // delete or revoke
//   if (tree.Reaches(tenant, leaf)) ...;    // the filter: may the leaf hold the tenant's vectors?
//   tree.ForEachShortlist(tenant, [](uint32_t node, const IdSet& ids) { ... });
//
// Without an SSD index the tree has one node, the root (leaf 0): a tenant is sparse while it
// has at most `cap` vectors, one dense leaf after.
//
// A sparse tenant (at most `cap` vectors: one shortlist, at the root) costs nothing: the tree
// stores neither its per-node counts nor its ids (its count is the access table's). Its ids are the
// ones the access table lets it see (AccessTable::Owned and Granted; the table stores them anyway,
// so they are stored once), and Reaches and Count below the root look at those ids' leaves. (Search
// never asks: such a tenant is answered exactly from its ids, db/search_planner.cc.) When it
// outgrows the root its counts are made from those ids; when it shrinks back they are dropped. So
// the tree must mirror the table: Attach(t, id) right after the table made `id` visible to `t`,
// Detach(t, id) before or after the table hides it, Rebuild for many ids at once.
//
// Why exact counts and not Bloom filters: a count per (tenant, node it reaches) costs 4 bytes in
// a sorted array (8 past 65,536 nodes and counts) and never answers "maybe"; Curator's Bloom
// filters (1% false positives at 1,000 tenants) cost a fixed ~1.2 KB per node whatever the tenants,
// are rebuilt lazily and can only be cleared by a rebuild. With the tree's depth of 2-4, a vector
// adds 2-4 counts per tenant.
//
// Memory (measured in docs/PERFORMANCE.md "Multi-tenant search"): counts in sorted (node,
// count) arrays of 16-bit halves while they fit, and the leaf of each id a paged array indexed by
// id (2 bytes per id below 65,536 leaves). A tenant past the cap that searches also keeps its
// ids grouped by leaf (3 bytes an id below 2^24 ids, LeafMembers) until it next changes: a second
// copy of its ids, what its searches take from a leaf's postings instead of reading their ids.
//
// Isolation: the tree only narrows where a search looks; every candidate read from a posting is
// still checked against the access table (access_table.h), the ids by leaf are made from the
// table's own sets of the tenant, and every hit is checked against it once more before it is
// returned (db/collection.cc, SearchLocked).
//
// Thread safety: none of its own; const methods may run concurrently.
#ifndef SHOAL_TENANTS_TENANT_TREE_H_
#define SHOAL_TENANTS_TENANT_TREE_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "index/clustering/centroid_tree.h"
#include "index/vector_index.h"
#include "tenants/access_table.h"
#include "tenants/compact_id_set.h"
#include "tenants/narrow_u32.h"

namespace shoal::tenants {

class TenantTree {
 public:
  using IdSet = CompactIdSet;
  static constexpr uint32_t kDefaultCap = 128;

  // One node (no SSD index). `access` (not owned; it must outlive the tree) holds the ids of
  // sparse tenants.
  explicit TenantTree(const AccessTable* access, uint32_t cap = kDefaultCap);
  // The shape of `tree` (copied: parents and leaf nodes; the tree need not outlive this).
  TenantTree(const index::CentroidTree& tree, const AccessTable* access, uint32_t cap);

  uint32_t cap() const { return cap_; }
  uint32_t num_leaves() const { return static_cast<uint32_t>(leaf_node_.size()); }

  // `id` (in leaf `leaf`, < num_leaves(); clamped) became visible to `t`: the access table
  // shows it already. Attaching twice is the caller's error (counts would double).
  void Attach(TenantId t, uint64_t id, uint32_t leaf);
  // `id` stopped being visible to `t`. Detaching a pair never attached is the caller's error
  // too (a sparse tenant's count would drop).
  void Detach(TenantId t, uint64_t id);
  // The same for many ids of one tenant (a batched Grant or Revoke), after the access table's
  // change for all of them: `ids[i]` lies in `leaves[i]`. A batch of at least a quarter of what
  // the tenant sees is one pass that rebuilds the tenant from the table (its counts, shortlists
  // and dense leaves), not a path update, split or merge per id.
  void Attach(TenantId t, std::span<const uint64_t> ids, std::span<const uint32_t> leaves);
  void Detach(TenantId t, std::span<const uint64_t> ids);
  // Forgets every tenant and attaches every tenant's visible ids at once (the access table's):
  // `ids[i]` lies in `leaves[i]`, and every id the table knows is among `ids`.
  void Rebuild(std::span<const uint64_t> ids, std::span<const uint32_t> leaves);
  // The leaf `id` was last attached with (kept after its last Detach: an id's vector, so its
  // leaf, never changes), until Forget.
  std::optional<uint32_t> LeafOf(uint64_t id) const;
  // Asks for the cache lines LeafOf(id) reads (a grant or revoke of a few keys, before its check).
  void PrefetchLeaf(uint64_t id) const { leaf_of_.Prefetch(id); }
  // `id` is gone for good (deleted, or the old id of a rewritten record): forgets its leaf.
  // Detach it from every tenant first.
  void Forget(uint64_t id) { leaf_of_.Erase(id); }
  void DropTenant(TenantId t);

  // The filter: does `leaf` hold any vector of `t`? (A count lookup; a scan of at most cap ids
  // for a tenant sparse at the root.)
  bool Reaches(TenantId t, uint32_t leaf) const;
  // Vectors of `t` below `node` (as Reaches).
  uint32_t Count(TenantId t, uint32_t node) const;
  // Calls fn(node, ids) for every shortlist of `t`, made from its ids and counts for the call
  // (a pass over the tenant's ids: for checks and tools, not for a query).
  void ForEachShortlist(TenantId t, const std::function<void(uint32_t, const IdSet&)>& fn) const;
  // Calls fn(leaf) for every dense leaf of `t` (more than cap() of its vectors).
  void ForEachDenseLeaf(TenantId t, const std::function<void(uint32_t)>& fn) const;

  // Structural check against what the tree should hold: `ids` are every (id, leaf) visible to
  // `t`. Reports (via `problem`) a node count that disagrees with those ids (a false negative
  // of the filter, or a stale count), a sparse tenant whose count is not its number of ids, a
  // tenant past the cap without counts. (Shortlists are made from the counts and ids, so they
  // hold every id once and none over the cap by construction.)
  void Check(TenantId t, const std::vector<std::pair<uint64_t, uint32_t>>& ids,
             const std::function<void(std::string)>& problem) const;
  size_t MemoryBytes() const;

 private:
  // Sorted (node, count) pairs; a node the tenant does not reach has none. Nodes and counts in
  // two NarrowVectors: 4 bytes a pair while the tree has under 65,536 nodes and no node holds
  // 65,536 of the tenant's vectors (each half widens alone, for that tenant only).
  class Counts {
   public:
    size_t size() const { return nodes_.size(); }
    uint32_t node(size_t i) const { return nodes_[i]; }
    uint32_t count(size_t i) const { return counts_[i]; }
    // 0 when `node` has none. `num_nodes`: the tree's (every node stored is below it).
    uint32_t Find(uint32_t node, size_t num_nodes) const;
    // Adds `delta` to the count of `node` (a count reaching 0 is dropped).
    void Add(uint32_t node, int delta, size_t num_nodes);
    // Replaces the pairs with `sorted` (ascending nodes, counts > 0).
    void Assign(const std::vector<std::pair<uint32_t, uint32_t>>& sorted);
    std::vector<std::pair<uint32_t, uint32_t>> ToVector() const;
    // fn(node, count) for every pair, ascending nodes; the widths looked at once, not per pair.
    template <typename Fn>
    void ForEach(Fn&& fn) const {
      const uint16_t *nl = nodes_.low(), *nh = nodes_.high();
      const uint16_t *cl = counts_.low(), *ch = counts_.high();
      if (nh == nullptr && ch == nullptr) {
        for (size_t i = 0; i < size(); ++i) fn(uint32_t{nl[i]}, uint32_t{cl[i]});
        return;
      }
      for (size_t i = 0; i < size(); ++i) fn(node(i), count(i));
    }
    size_t HeapBytes() const { return nodes_.HeapBytes() + counts_.HeapBytes(); }

   private:
    // The first index whose node is not below `node`. The pairs hold distinct nodes below
    // `num_nodes`, so at most `node` of them and at least node - (num_nodes - size()) lie below
    // it: the search looks only there. For the upper nodes of an id's path (small ids: they are
    // breadth-first) that is the array's first lines, for a tenant that reaches most nodes a few
    // lines, not a binary search of the whole array, whose steps are cache misses.
    size_t Lower(uint32_t node, size_t num_nodes) const;
    NarrowVector nodes_, counts_;
  };
  // A tenant's ids grouped by the leaf each was placed in, leaf after leaf in the order of its
  // counts (ascending node), each id as its distance from `base`: what a query's members-first
  // scan takes from a leaf's postings instead of reading their ids (TenantScope::
  // AppendLeafMembers). Made by the first search after a change to the tenant, dropped by the
  // next change (MembersOf).
  // The ids take 3 bytes each while they span less than 2^24 (a collection of up to 16M ids),
  // else 4: a quarter of the lists' RAM, for a load and a mask an id.
  struct LeafMembers {
    uint64_t base = 0;
    uint32_t width = 4;          // bytes an id
    std::vector<uint8_t> bytes;  // id i at bytes[i * width], little-endian; one byte of padding
                                 // when width is 3, so that each id is one 4-byte load
    void Resize(size_t n, uint64_t span) {
      width = span < (uint64_t{1} << 24) ? 3 : 4;
      bytes.assign(n * width + (width == 3 ? 1 : 0), 0);
    }
    void Set(size_t i, uint32_t offset) { std::memcpy(&bytes[i * width], &offset, width); }
    uint32_t At(size_t i) const {
      uint32_t v;
      std::memcpy(&v, &bytes[i * width], sizeof(v));
      return width == 4 ? v : v & 0xFFFFFFu;
    }
    size_t HeapBytes() const { return bytes.capacity(); }
  };
  // A tenant with more than cap_ vectors: its counts, and once searched its ids by leaf. Its
  // shortlists follow from them and its ids (the access table's) and are made when asked for
  // (ForEachShortlist): stored shortlists and dense leaves would cost a set per (tenant, node).
  struct Sub {
    Counts count;  // node -> vectors below (absent = 0)
    // Made by MembersOf under members_mu_ (searches run concurrently); reset by every change
    // to the counts (the tree's writers run alone).
    mutable std::shared_ptr<const LeafMembers> members;
  };
  // `t`'s ids by leaf (s: its Sub), made on the first call after a change; null when its ids
  // span 2^32 or more, or disagree with its counts (then its searches read postings' ids).
  std::shared_ptr<const LeafMembers> MembersOf(TenantId t, const Sub& s) const;
  // Root first, down to the leaf's node.
  void Path(uint32_t leaf, std::vector<uint32_t>* path) const;
  uint32_t CountIn(const Sub& s, uint32_t node) const;
  // Calls fn(id) for every id the access table lets `t` see.
  template <typename Fn>
  void ForEachVisible(TenantId t, const Fn& fn) const {
    for (const IdSet* set : {access_->Owned(t), access_->Granted(t)}) {
      if (set != nullptr) set->ForEach(fn);
    }
  }
  // `s` from `t`'s visible ids (it outgrew the root, or a rebuild): its counts.
  void Build(TenantId t, Sub& s) const;
  // The tenant from the access table alone: a count while it sees at most cap_ ids, else Build.
  void RebuildTenant(TenantId t);
  // Is a batch of `n` ids a large enough part of the `visible` ids of a tenant to rebuild it?
  static bool RebuildFor(size_t n, size_t visible) { return n >= 16 && 4 * n >= visible; }
  // Attach to a tenant past the cap: the counts along the id's path.
  void AttachToSub(Sub& s, const std::vector<uint32_t>& path) const;
  uint32_t LeafOfId(uint64_t id) const;
  uint32_t root() const;

  const AccessTable* access_;
  uint32_t cap_;
  std::vector<uint32_t> parent_;     // by node; root: UINT32_MAX
  std::vector<uint32_t> leaf_node_;  // by leaf
  std::vector<uint32_t> node_leaf_;  // by node: leaf index, UINT32_MAX for inner nodes
  std::vector<std::vector<uint32_t>> children_;
  NarrowIdMap leaf_of_;  // id -> leaf, for splits and for LeafOf
  // Tenants with more than cap_ vectors (the others, most tenants of a collection, are
  // sparse: nothing stored). Node-based: a slot is a pointer, not a Sub.
  absl::node_hash_map<TenantId, Sub> subs_;
  // Guards Sub::members while searches share the tree (a pointer: the tree is moved).
  std::unique_ptr<absl::Mutex> members_mu_ = std::make_unique<absl::Mutex>();

  friend class TenantScope;  // reads one tenant's Sub for a whole search
};

// What a tenant's SPANN search may scan: the postings whose tree leaf holds any of its vectors.
// The navigator descends only into nodes that hold some (the tenant's sub-tree), and the scope is
// weighted by the tenant's per-leaf counts (PostingScope::weighted): a query scans the nearest of
// the tenant's leaves until they hold the candidates an unrestricted query would see (Curator's
// candidate budget), so a tenant sparse near the query is searched farther out.
class TenantScope final : public index::PostingScope {
 public:
  // `tree` (not owned) must outlive the scope and not change while it is used. A tenant past
  // the cap gets its counts unpacked into an array by node (a query asks for the count of every
  // child the navigator meets: a profile of large tenants' queries had the binary searches of
  // the sorted counts at 4-6% of their time).
  // `unindexed` (may be null): ids the tree holds but the searched index does not (the write
  // buffer's, searched apart), left out of AppendLeafMembers.
  TenantScope(const TenantTree* tree, TenantId tenant,
              std::function<bool(uint64_t)> unindexed = nullptr);
  ~TenantScope() override;
  TenantScope(const TenantScope&) = delete;
  TenantScope& operator=(const TenantScope&) = delete;
  bool AllowsPosting(uint32_t /*posting*/, uint32_t leaf) const override {
    return leaf < tree_->num_leaves() && AllowsNode(tree_->leaf_node_[leaf]);
  }
  bool AllowsNode(uint32_t node) const override { return CountBelow(node) > 0; }
  // Exact counts per node exist once a tenant outgrows one shortlist (more than cap() vectors);
  // below that they are made from its ids at each call (search answers such a tenant exactly).
  bool weighted() const override { return sub_ != nullptr; }
  uint32_t LeafWeight(uint32_t leaf) const override {
    return leaf < tree_->num_leaves() ? CountBelow(tree_->leaf_node_[leaf]) : 0;
  }
  // Its vectors and the leaves holding any of them (past the cap; else {0, 0} and no leaves).
  std::pair<uint64_t, uint32_t> Extent() const override {
    return {vectors_, static_cast<uint32_t>(leaves_.size())};
  }
  std::span<const uint32_t> Leaves() const override { return leaves_; }
  // Its ids by the leaf each was placed in (TenantTree::MembersOf, made on the first call after a
  // change to the tenant): for a tenant past the cap in a tree of at most 64k nodes.
  bool ListsMembers() const override { return !start_.empty(); }
  bool AppendLeafMembers(uint32_t leaf, std::vector<uint64_t>* out) const override;

 private:
  uint32_t CountBelow(uint32_t node) const;

  const TenantTree* tree_;
  TenantId tenant_;
  const TenantTree::Sub* sub_;     // null: sparse, or the tenant holds nothing
  std::vector<uint32_t> by_node_;  // sub_'s counts by node (empty: sparse, or a huge tree)
  uint64_t vectors_ = 0;           // the tenant's (past the cap)
  std::vector<uint32_t> leaves_;   // leaves holding any of them
  // By node, where a leaf node's ids begin in members_->ids (only the tenant's leaves are set:
  // no other is read); empty when its ids are not listed.
  std::vector<uint32_t> start_;
  std::function<bool(uint64_t)> unindexed_;
  mutable absl::once_flag members_made_;
  mutable std::shared_ptr<const TenantTree::LeafMembers> members_;
};

}  // namespace shoal::tenants

#endif  // SHOAL_TENANTS_TENANT_TREE_H_
