#include "tenants/tenant_tree.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/spare_vector.h"

namespace shoal::tenants {
namespace {
constexpr uint32_t kNone = UINT32_MAX;
}  // namespace

TenantTree::TenantTree(const AccessTable* access, uint32_t cap)
    : access_(access),
      cap_(std::max<uint32_t>(cap, 1)),
      parent_{kNone},
      leaf_node_{0},
      node_leaf_{0},
      children_(1) {}

TenantTree::TenantTree(const index::CentroidTree& tree, const AccessTable* access, uint32_t cap)
    : access_(access), cap_(std::max<uint32_t>(cap, 1)) {
  const size_t nodes = tree.num_nodes();
  parent_.assign(nodes, kNone);
  node_leaf_.assign(nodes, kNone);
  children_.resize(nodes);
  for (uint32_t n = 0; n < nodes; ++n) {
    for (uint32_t c : tree.children(n)) {
      parent_[c] = n;
      children_[n].push_back(c);
    }
  }
  leaf_node_.resize(tree.num_leaves());
  for (uint32_t leaf = 0; leaf < tree.num_leaves(); ++leaf) {
    leaf_node_[leaf] = tree.leaf_node(leaf);
    node_leaf_[leaf_node_[leaf]] = leaf;
  }
  if (leaf_node_.empty()) *this = TenantTree(access, cap);
}

uint32_t TenantTree::root() const {
  uint32_t node = leaf_node_[0];
  while (parent_[node] != kNone) node = parent_[node];
  return node;
}

void TenantTree::Path(uint32_t leaf, std::vector<uint32_t>* path) const {
  path->clear();
  for (uint32_t n = leaf_node_[std::min<uint32_t>(leaf, num_leaves() - 1)]; n != kNone;
       n = parent_[n]) {
    path->push_back(n);
  }
  std::reverse(path->begin(), path->end());
}

size_t TenantTree::Counts::Lower(uint32_t node, size_t num_nodes) const {
  const size_t absent = num_nodes > size() ? num_nodes - size() : 0;
  size_t hi = std::min<size_t>(size(), node);
  size_t lo = std::min<size_t>(hi, node > absent ? node - absent : 0);
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (nodes_[mid] < node) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

uint32_t TenantTree::Counts::Find(uint32_t node, size_t num_nodes) const {
  const size_t i = Lower(node, num_nodes);
  return i < nodes_.size() && nodes_[i] == node ? counts_[i] : 0;
}

void TenantTree::Counts::Add(uint32_t node, int delta, size_t num_nodes) {
  const size_t i = Lower(node, num_nodes);
  if (i == nodes_.size() || nodes_[i] != node) {
    if (delta <= 0) return;
    nodes_.Insert(i, node);
    counts_.Insert(i, static_cast<uint32_t>(delta));
    return;
  }
  const uint32_t c = static_cast<uint32_t>(static_cast<int64_t>(counts_[i]) + delta);
  if (c != 0) {
    counts_.Set(i, c);
    return;
  }
  nodes_.Erase(i, i + 1);
  counts_.Erase(i, i + 1);
  nodes_.Trim();
  counts_.Trim();
}

void TenantTree::Counts::Assign(const std::vector<std::pair<uint32_t, uint32_t>>& sorted) {
  *this = Counts();
  for (const auto& [node, count] : sorted) {
    nodes_.Insert(nodes_.size(), node);
    counts_.Insert(counts_.size(), count);
  }
}

std::vector<std::pair<uint32_t, uint32_t>> TenantTree::Counts::ToVector() const {
  std::vector<std::pair<uint32_t, uint32_t>> out(size());
  for (size_t i = 0; i < size(); ++i) out[i] = {node(i), count(i)};
  return out;
}

uint32_t TenantTree::CountIn(const Sub& s, uint32_t node) const {
  return s.count.Find(node, parent_.size());
}

uint32_t TenantTree::LeafOfId(uint64_t id) const { return leaf_of_.Find(id).value_or(0); }

void TenantTree::Attach(TenantId t, uint64_t id, uint32_t leaf) {
  leaf = std::min<uint32_t>(leaf, num_leaves() - 1);
  leaf_of_.Set(id, leaf);
  auto sub = subs_.find(t);
  if (sub == subs_.end()) {
    // Sparse after it too (the table has `id`): nothing stored. Else leaving the root: counts
    // from its ids, `id` included.
    if (access_->VisibleCount(t) > cap_) Build(t, subs_[t]);
    return;
  }
  std::vector<uint32_t> path;
  Path(leaf, &path);
  AttachToSub(sub->second, path);
}

void TenantTree::AttachToSub(Sub& s, const std::vector<uint32_t>& path) const {
  for (uint32_t n : path) s.count.Add(n, 1, parent_.size());
  s.members.reset();
}

void TenantTree::Build(TenantId t, Sub& s) const {
  absl::flat_hash_map<uint32_t, uint32_t> counts;
  std::vector<uint32_t> path;
  ForEachVisible(t, [&](uint64_t id) {
    Path(LeafOfId(id), &path);
    for (uint32_t n : path) ++counts[n];
  });
  std::vector<std::pair<uint32_t, uint32_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  s.count.Assign(sorted);
  s.members.reset();
}

std::shared_ptr<const TenantTree::LeafMembers> TenantTree::MembersOf(TenantId t,
                                                                     const Sub& s) const {
  {
    absl::MutexLock lock(members_mu_.get());
    if (s.members != nullptr) return s.members;
  }
  // Made outside the lock (two searches of one tenant may both make it; one is kept).
  const IdSet::Extent extent = IdSet::ExtentOf({access_->Owned(t), access_->Granted(t)});
  const uint64_t lo = extent.lo, hi = extent.hi;  // (a lambda below reads lo)
  if (lo > hi || hi - lo > UINT32_MAX) return nullptr;
  // Each leaf's range [begin, end) in count order; filled from its end down.
  absl::flat_hash_map<uint32_t, std::pair<uint32_t, uint32_t>> range;  // leaf -> (begin, next)
  uint32_t total = 0;
  for (size_t i = 0; i < s.count.size(); ++i) {
    const uint32_t leaf = node_leaf_[s.count.node(i)];
    if (leaf == kNone) continue;
    range[leaf] = {total, total + s.count.count(i)};
    total += s.count.count(i);
  }
  auto made = std::make_shared<LeafMembers>();
  made->base = lo;
  made->Resize(total, hi - lo);
  bool agree = true;
  ForEachVisible(t, [&](uint64_t id) {
    const auto it = range.find(LeafOfId(id));
    if (it == range.end() || it->second.second == it->second.first) {
      agree = false;  // more ids in the leaf than its count
      return;
    }
    made->Set(--it->second.second, static_cast<uint32_t>(id - lo));
  });
  for (const auto& [leaf, r] : range) agree = agree && r.first == r.second;
  if (!agree) return nullptr;
  absl::MutexLock lock(members_mu_.get());
  if (s.members == nullptr) s.members = std::move(made);
  return s.members;
}

void TenantTree::Rebuild(std::span<const uint64_t> ids, std::span<const uint32_t> leaves) {
  subs_.clear();
  for (size_t i = 0; i < ids.size() && i < leaves.size(); ++i) {
    leaf_of_.Set(ids[i], std::min<uint32_t>(leaves[i], num_leaves() - 1));
  }
  access_->ForEachTenant([&](TenantId t) {
    if (access_->VisibleCount(t) > cap_) Build(t, subs_[t]);
  });
}

void TenantTree::RebuildTenant(TenantId t) {
  if (access_->VisibleCount(t) <= cap_) {
    subs_.erase(t);
    return;
  }
  Build(t, subs_[t]);
}

void TenantTree::Attach(TenantId t, std::span<const uint64_t> ids,
                        std::span<const uint32_t> leaves) {
  const size_t n = std::min(ids.size(), leaves.size());
  const size_t visible = access_->VisibleCount(t);
  // Id by id only where no step reads the table: a sparse tenant that outgrows the root is
  // built from it, which already holds the whole batch.
  if (!RebuildFor(n, visible) && (subs_.contains(t) || visible <= cap_)) {
    for (size_t i = 0; i < n; ++i) Attach(t, ids[i], leaves[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    leaf_of_.Set(ids[i], std::min<uint32_t>(leaves[i], num_leaves() - 1));
  }
  RebuildTenant(t);
}

void TenantTree::Detach(TenantId t, std::span<const uint64_t> ids) {
  if (!RebuildFor(ids.size(), access_->VisibleCount(t) + ids.size())) {
    for (uint64_t id : ids) Detach(t, id);
    return;
  }
  RebuildTenant(t);
}

std::optional<uint32_t> TenantTree::LeafOf(uint64_t id) const { return leaf_of_.Find(id); }

void TenantTree::Detach(TenantId t, uint64_t id) {
  if (!leaf_of_.Find(id).has_value()) return;
  const auto sub = subs_.find(t);
  if (sub == subs_.end()) return;  // sparse: nothing stored
  Sub& s = sub->second;
  std::vector<uint32_t> path;
  Path(LeafOfId(id), &path);
  for (uint32_t n : path) s.count.Add(n, -1, parent_.size());
  s.members.reset();
  if (const uint32_t total = CountIn(s, path.front()); total <= cap_) {
    subs_.erase(sub);  // sparse again: its ids are the access table's
  }
}

void TenantTree::DropTenant(TenantId t) { subs_.erase(t); }

bool TenantTree::Reaches(TenantId t, uint32_t leaf) const {
  if (leaf >= num_leaves()) return false;
  return Count(t, leaf_node_[leaf]) > 0;
}

uint32_t TenantTree::Count(TenantId t, uint32_t node) const {
  if (node >= parent_.size()) return 0;
  if (const auto sub = subs_.find(t); sub != subs_.end()) return CountIn(sub->second, node);
  const size_t visible = access_->VisibleCount(t);
  if (visible == 0) return 0;
  if (parent_[node] == kNone) return static_cast<uint32_t>(visible);  // the root
  // Sparse: count its (at most cap) ids below `node`.
  uint32_t n = 0;
  ForEachVisible(t, [&](uint64_t id) {
    for (uint32_t x = leaf_node_[LeafOfId(id)]; x != kNone; x = parent_[x]) {
      if (x == node) {
        ++n;
        break;
      }
    }
  });
  return n;
}

namespace {

// Per thread, the arrays of the last TenantScope destroyed (base/spare_vector.h). The spare
// by-node array is all zeros: a scope clears the entries it set (a tenant's nodes, hundreds)
// instead of a query filling every node's (~17k at 1M vectors: most of the scope's cost).
thread_local std::vector<uint32_t> spare_by_node, spare_leaves, spare_start;
constexpr size_t kMaxDenseNodes = size_t{1} << 16;

}  // namespace

TenantScope::TenantScope(const TenantTree* tree, TenantId tenant,
                         std::function<bool(uint64_t)> unindexed)
    : tree_(tree), tenant_(tenant), sub_(nullptr), unindexed_(std::move(unindexed)) {
  const auto it = tree->subs_.find(tenant);
  if (it == tree->subs_.end()) return;
  base::TakeSpare(spare_leaves, leaves_);
  sub_ = &it->second;
  vectors_ = tree->CountIn(*sub_, tree->root());
  const TenantTree::Counts& c = sub_->count;
  // Up to 64k nodes (256 KiB): the counts by node beat a binary search per child. start_: where
  // each leaf's ids begin in the tenant's LeafMembers (the same order as its counts); entries of
  // other nodes are left as the spare had them: none is read.
  const bool dense = tree->parent_.size() <= kMaxDenseNodes;
  if (dense) {
    by_node_.swap(spare_by_node);
    by_node_.resize(tree->parent_.size());  // zeros: the spare's entries all are
    start_.swap(spare_start);
    if (start_.size() < by_node_.size()) start_.resize(by_node_.size());
  }
  // Without a branch per pair (inner nodes and leaves interleave in node order): every pair's
  // leaf is written and kept only when it is one; start_ is set for inner nodes too (never read).
  leaves_.resize(c.size());
  const uint32_t* node_leaf = tree->node_leaf_.data();
  uint32_t* leaves = leaves_.data();
  size_t kept = 0;
  uint32_t* by_node = by_node_.data();
  uint32_t* start = start_.data();
  uint32_t at = 0;
  c.ForEach([&](uint32_t node, uint32_t count) {
    if (dense) {  // the same way for every pair: predicted
      by_node[node] = count;
      start[node] = at;
    }
    const uint32_t leaf = node_leaf[node];
    const uint32_t is_leaf = leaf != UINT32_MAX;
    leaves[kept] = leaf;
    kept += is_leaf;
    at += count & (0u - is_leaf);
  });
  leaves_.resize(kept);
}

TenantScope::~TenantScope() {
  base::GiveBackSpare(leaves_, spare_leaves);
  // The by-node arrays are kept up to the 64k nodes they are made for (past base's limit: a
  // 1M-vector tree has ~17k nodes, and a query would allocate them again), by_node_ cleared.
  if (!by_node_.empty()) {
    uint32_t* by_node = by_node_.data();
    sub_->count.ForEach([by_node](uint32_t node, uint32_t) { by_node[node] = 0; });
    by_node_.swap(spare_by_node);
  }
  if (!start_.empty() && start_.capacity() <= kMaxDenseNodes) start_.swap(spare_start);
}

bool TenantScope::AppendLeafMembers(uint32_t leaf, std::vector<uint64_t>* out) const {
  if (start_.empty() || leaf >= tree_->num_leaves()) return false;
  absl::call_once(members_made_, [this] { members_ = tree_->MembersOf(tenant_, *sub_); });
  if (members_ == nullptr) return false;
  const uint32_t node = tree_->leaf_node_[leaf];
  const uint32_t n = by_node_[node];
  const size_t first = n != 0 ? start_[node] : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t id = members_->base + members_->At(first + i);
    if (unindexed_ == nullptr || !unindexed_(id)) out->push_back(id);
  }
  return true;
}

uint32_t TenantScope::CountBelow(uint32_t node) const {
  if (node >= tree_->parent_.size()) return 0;
  if (!by_node_.empty()) return by_node_[node];
  return sub_ != nullptr ? tree_->CountIn(*sub_, node) : tree_->Count(tenant_, node);
}

void TenantTree::ForEachShortlist(TenantId t,
                                  const std::function<void(uint32_t, const IdSet&)>& fn) const {
  if (!subs_.contains(t) && access_->VisibleCount(t) > 0) {  // sparse: one, at the root
    IdSet ids;
    ForEachVisible(t, [&](uint64_t id) { ids.insert(id); });
    fn(root(), ids);
    return;
  }
  const auto sub = subs_.find(t);
  if (sub == subs_.end()) return;
  // Made for the call: each visible id into the first node of its path with at most cap of
  // the tenant's vectors (none: a dense leaf's).
  absl::flat_hash_map<uint32_t, IdSet> shortlists;
  std::vector<uint32_t> path;
  ForEachVisible(t, [&](uint64_t id) {
    Path(LeafOfId(id), &path);
    for (uint32_t n : path) {
      if (CountIn(sub->second, n) <= cap_) {
        shortlists[n].insert(id);
        return;
      }
    }
  });
  for (const auto& [n, ids] : shortlists) fn(n, ids);
}

void TenantTree::ForEachDenseLeaf(TenantId t, const std::function<void(uint32_t)>& fn) const {
  const auto sub = subs_.find(t);
  if (sub == subs_.end()) return;
  const Counts& c = sub->second.count;
  for (size_t i = 0; i < c.size(); ++i) {
    if (node_leaf_[c.node(i)] != kNone && c.count(i) > cap_) fn(node_leaf_[c.node(i)]);
  }
}

size_t TenantTree::MemoryBytes() const {
  size_t bytes = (parent_.capacity() + leaf_node_.capacity() + node_leaf_.capacity()) * 4 +
                 leaf_of_.MemoryBytes() + subs_.capacity() * (sizeof(void*) + 1) +
                 subs_.size() * (sizeof(TenantId) + sizeof(Sub));
  for (const auto& c : children_) bytes += sizeof(c) + c.capacity() * 4;
  absl::MutexLock lock(members_mu_.get());
  for (const auto& [t, s] : subs_) {
    bytes += s.count.HeapBytes();
    if (s.members != nullptr) bytes += sizeof(LeafMembers) + s.members->HeapBytes();
  }
  return bytes;
}

void TenantTree::Check(TenantId t, const std::vector<std::pair<uint64_t, uint32_t>>& ids,
                       const std::function<void(std::string)>& problem) const {
  const std::string who = absl::StrCat("tenant tree of tenant id ", t, ": ");
  const auto sub = subs_.find(t);
  if (ids.size() <= cap_) {  // sparse: nothing stored
    if (sub != subs_.end()) {
      problem(absl::StrCat(who, "sparse tenant of ", ids.size(), " ids keeps node counts"));
    }
    return;
  }
  if (sub == subs_.end()) {
    problem(absl::StrCat(who, ids.size(), " ids > cap ", cap_, " but no sub-tree"));
    return;
  }
  absl::flat_hash_map<uint32_t, uint32_t> want;
  std::vector<uint32_t> path;
  for (const auto& [id, leaf] : ids) {
    Path(leaf, &path);
    for (uint32_t n : path) ++want[n];
  }
  const Sub& s = sub->second;
  std::vector<std::pair<uint32_t, uint32_t>> sorted(want.begin(), want.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted != s.count.ToVector()) problem(absl::StrCat(who, "node counts disagree with its ids"));
}

}  // namespace shoal::tenants
