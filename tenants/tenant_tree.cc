#include "tenants/tenant_tree.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shoal::tenants {
namespace {
constexpr uint32_t kNone = UINT32_MAX;

// A tenant with at most cap vectors (one shortlist, at the root) keeps only its root count:
// Reaches and Count below the root then look at the leaves of its <= cap ids. Search never asks
// for such a tenant (it is answered exactly from its ids, db/search_planner.cc), and small
// tenants are most tenants: their per-node counts were most of the tree's RAM at 10,000 tenants.
// The other counts are made from the ids' leaves when a tenant outgrows the root, and dropped
// when it shrinks back.
uint32_t RootOf(const std::vector<uint32_t>& parent, uint32_t node) {
  while (parent[node] != kNone) node = parent[node];
  return node;
}
}  // namespace

TenantTree::TenantTree(uint32_t cap)
    : cap_(std::max<uint32_t>(cap, 1)),
      parent_{kNone},
      leaf_node_{0},
      node_leaf_{0},
      children_(1) {}

TenantTree::TenantTree(const index::CentroidTree& tree, uint32_t cap)
    : cap_(std::max<uint32_t>(cap, 1)) {
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
  if (leaf_node_.empty()) *this = TenantTree(cap);
}

void TenantTree::Path(uint32_t leaf, std::vector<uint32_t>* path) const {
  path->clear();
  for (uint32_t n = leaf_node_[std::min<uint32_t>(leaf, num_leaves() - 1)]; n != kNone;
       n = parent_[n]) {
    path->push_back(n);
  }
  std::reverse(path->begin(), path->end());
}

namespace {
auto CountLess = [](const std::pair<uint32_t, uint32_t>& c, uint32_t node) {
  return c.first < node;
};
}  // namespace

void TenantTree::AddCount(Counts& c, uint32_t node, int delta) {
  auto it = std::lower_bound(c.begin(), c.end(), node, CountLess);
  if (it == c.end() || it->first != node) {
    if (delta <= 0) return;
    if (c.size() == c.capacity()) {
      const size_t at = it - c.begin();
      c.reserve(c.size() * 5 / 4 + 2);  // by a quarter: the arrays are many and small
      it = c.begin() + at;
    }
    c.insert(it, {node, static_cast<uint32_t>(delta)});
    return;
  }
  it->second += delta;
  if (it->second == 0) {
    c.erase(it);
    if (c.capacity() > 2 * c.size() + 8) c.shrink_to_fit();
  }
}

uint32_t TenantTree::CountIn(const Sub& s, uint32_t node) const {
  const auto it = std::lower_bound(s.count.begin(), s.count.end(), node, CountLess);
  return it == s.count.end() || it->first != node ? 0 : it->second;
}

uint32_t TenantTree::LeafOfId(uint64_t id) const {
  const uint32_t* leaf = leaf_of_.Find(id);
  return leaf == nullptr ? 0 : *leaf;
}

void TenantTree::Attach(TenantId t, uint64_t id, uint32_t leaf) {
  leaf = std::min<uint32_t>(leaf, num_leaves() - 1);
  leaf_of_.Set(id, leaf);
  Sub& s = subs_[t];
  std::vector<uint32_t> path;
  Path(leaf, &path);
  const uint32_t root = path.front(), total = CountIn(s, root);
  if (total < cap_) {  // sparse after it too: the root's count and shortlist only
    AddCount(s.count, root, 1);
    s.shortlist[root].insert(id);
    return;
  }
  if (total == cap_) {  // leaving the root: every node's count, from the ids' leaves
    std::vector<uint32_t> other;
    s.shortlist[root].ForEach([&](uint64_t o) {
      Path(LeafOfId(o), &other);
      for (size_t i = 1; i < other.size(); ++i) AddCount(s.count, other[i], 1);
    });
  }
  for (uint32_t n : path) AddCount(s.count, n, 1);
  // The id's bucket is the first node of its path with at most cap vectors of the tenant.
  for (uint32_t n : path) {
    auto it = s.shortlist.find(n);
    if (CountIn(s, n) <= cap_) {
      if (it == s.shortlist.end()) it = s.shortlist.emplace(n, IdSet{}).first;
      it->second.insert(id);
      return;
    }
    if (it != s.shortlist.end()) SplitDown(s, n);  // it just overflowed
  }
  s.dense[path.back()].insert(id);  // a dense leaf
}

void TenantTree::SplitDown(Sub& s, uint32_t node) {
  IdSet ids = std::move(s.shortlist[node]);
  s.shortlist.erase(node);
  if (children_[node].empty()) {
    s.dense[node] = std::move(ids);
    return;
  }
  std::vector<uint32_t> path;
  ids.ForEach([&](uint64_t id) {
    Path(LeafOfId(id), &path);
    const auto at = std::find(path.begin(), path.end(), node);
    if (at == path.end() || at + 1 == path.end()) return;
    s.shortlist[*(at + 1)].insert(id);
  });
}

void TenantTree::Gather(Sub& s, uint32_t node, IdSet* into) {
  for (auto* buckets : {&s.shortlist, &s.dense}) {
    if (auto it = buckets->find(node); it != buckets->end()) {
      if (into->empty()) {
        *into = std::move(it->second);
      } else {
        it->second.ForEach([&](uint64_t id) { into->insert(id); });
      }
      buckets->erase(it);
      return;
    }
  }
  for (uint32_t c : children_[node]) {
    if (CountIn(s, c) > 0) Gather(s, c, into);
  }
}

void TenantTree::MergeUp(Sub& s, uint32_t node) {
  IdSet ids;
  Gather(s, node, &ids);
  if (!ids.empty()) s.shortlist[node] = std::move(ids);
}

std::optional<uint32_t> TenantTree::LeafOf(uint64_t id) const {
  const uint32_t* leaf = leaf_of_.Find(id);
  if (leaf == nullptr) return std::nullopt;
  return *leaf;
}

void TenantTree::Detach(TenantId t, uint64_t id) {
  const auto sub = subs_.find(t);
  if (sub == subs_.end() || leaf_of_.Find(id) == nullptr) return;
  Sub& s = sub->second;
  const uint32_t leaf = LeafOfId(id);
  std::vector<uint32_t> path;
  Path(leaf, &path);
  bool found = false;
  for (uint32_t n : path) {
    auto it = s.shortlist.find(n);
    if (it != s.shortlist.end() && it->second.erase(id)) {
      if (it->second.empty()) s.shortlist.erase(it);
      found = true;
      break;
    }
  }
  if (!found) {
    auto it = s.dense.find(path.back());
    if (it == s.dense.end() || !it->second.erase(id)) return;  // never attached
    if (it->second.empty()) s.dense.erase(it);
  }
  const uint32_t root = path.front();
  if (CountIn(s, root) <= cap_) {  // sparse: the root's count only
    AddCount(s.count, root, -1);
    if (s.count.empty()) subs_.erase(sub);
    return;
  }
  for (uint32_t n : path) AddCount(s.count, n, -1);
  if (const uint32_t total = CountIn(s, root); total <= cap_) {
    // Sparse again: one shortlist at the root, and the root's count only.
    MergeUp(s, root);
    s.count.assign(1, {root, total});
    s.count.shrink_to_fit();
    return;
  }
  // The first sparse node of the path gathers what lies below it (a merge, when it was dense).
  for (uint32_t n : path) {
    if (CountIn(s, n) == 0) break;
    if (CountIn(s, n) <= cap_) {
      if (!s.shortlist.contains(n)) MergeUp(s, n);
      break;
    }
  }
  if (s.count.empty()) subs_.erase(sub);
}

void TenantTree::DropTenant(TenantId t) { subs_.erase(t); }

bool TenantTree::Reaches(TenantId t, uint32_t leaf) const {
  if (leaf >= num_leaves()) return false;
  return Count(t, leaf_node_[leaf]) > 0;
}

uint32_t TenantTree::Count(TenantId t, uint32_t node) const {
  const auto sub = subs_.find(t);
  if (sub == subs_.end() || node >= parent_.size()) return 0;
  const Sub& s = sub->second;
  const uint32_t root = RootOf(parent_, node);
  if (node == root || CountIn(s, root) > cap_) return CountIn(s, node);
  // Sparse (at most cap ids, all in the root's shortlist): count those below `node`.
  uint32_t n = 0;
  const auto list = s.shortlist.find(root);
  if (list == s.shortlist.end()) return 0;
  list->second.ForEach([&](uint64_t id) {
    for (uint32_t x = leaf_node_[LeafOfId(id)]; x != kNone; x = parent_[x]) {
      if (x == node) {
        ++n;
        break;
      }
    }
  });
  return n;
}

TenantScope::TenantScope(const TenantTree* tree, TenantId tenant)
    : tree_(tree), tenant_(tenant), sub_(nullptr), sparse_(false) {
  const auto it = tree->subs_.find(tenant);
  if (it == tree->subs_.end()) return;
  sub_ = &it->second;
  sparse_ = tree->CountIn(*sub_, RootOf(tree->parent_, tree->leaf_node_[0])) <= tree->cap_;
}

uint32_t TenantScope::CountBelow(uint32_t node) const {
  if (sub_ == nullptr || node >= tree_->parent_.size()) return 0;
  return sparse_ ? tree_->Count(tenant_, node) : tree_->CountIn(*sub_, node);
}

void TenantTree::ForEachShortlist(TenantId t,
                                  const std::function<void(uint32_t, const IdSet&)>& fn) const {
  const auto sub = subs_.find(t);
  if (sub == subs_.end()) return;
  for (const auto& [n, ids] : sub->second.shortlist) fn(n, ids);
}

void TenantTree::ForEachDenseLeaf(TenantId t, const std::function<void(uint32_t)>& fn) const {
  const auto sub = subs_.find(t);
  if (sub == subs_.end()) return;
  for (const auto& [n, ids] : sub->second.dense) fn(node_leaf_[n]);
}

size_t TenantTree::MemoryBytes() const {
  using Bucket = std::pair<const uint32_t, IdSet>;
  size_t bytes = (parent_.capacity() + leaf_node_.capacity() + node_leaf_.capacity()) * 4 +
                 leaf_of_.MemoryBytes() + subs_.capacity() * (sizeof(void*) + 1) +
                 subs_.size() * (sizeof(TenantId) + sizeof(Sub));
  for (const auto& c : children_) bytes += sizeof(c) + c.capacity() * 4;
  for (const auto& [t, s] : subs_) {
    bytes += s.count.capacity() * sizeof(Counts::value_type) +
             (s.shortlist.capacity() + s.dense.capacity()) * (sizeof(Bucket) + 1);
    for (const auto& [n, ids] : s.shortlist) bytes += ids.MemoryBytes();
    for (const auto& [n, ids] : s.dense) bytes += ids.MemoryBytes();
  }
  return bytes;
}

void TenantTree::Check(TenantId t, const std::vector<std::pair<uint64_t, uint32_t>>& ids,
                       const std::function<void(std::string)>& problem) const {
  const std::string who = absl::StrCat("tenant tree of tenant id ", t, ": ");
  absl::flat_hash_map<uint32_t, uint32_t> want;
  std::vector<uint32_t> path;
  for (const auto& [id, leaf] : ids) {
    Path(leaf, &path);
    for (uint32_t n : path) ++want[n];
  }
  if (ids.size() <= cap_ && !ids.empty()) {  // sparse: the root's count only
    const uint32_t root = RootOf(parent_, leaf_node_[0]);
    want = {{root, static_cast<uint32_t>(ids.size())}};
  }
  const auto sub = subs_.find(t);
  const Sub empty;
  const Sub& s = sub == subs_.end() ? empty : sub->second;
  Counts sorted(want.begin(), want.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted != s.count) problem(absl::StrCat(who, "node counts disagree with its ids"));
  absl::flat_hash_map<uint64_t, int> seen;
  for (const auto& [n, list] : s.shortlist) {
    if (list.size() > cap_) {
      problem(absl::StrCat(who, "shortlist at node ", n, " holds ", list.size(), " > cap ", cap_));
    }
    if (parent_[n] != kNone && CountIn(s, parent_[n]) <= cap_) {
      problem(absl::StrCat(who, "shortlist at node ", n, " below a sparse parent"));
    }
    list.ForEach([&](uint64_t id) { ++seen[id]; });
  }
  for (const auto& [n, list] : s.dense) {
    if (list.size() <= cap_) problem(absl::StrCat(who, "dense leaf node ", n, " is sparse"));
    list.ForEach([&](uint64_t id) { ++seen[id]; });
  }
  for (const auto& [id, leaf] : ids) {
    const auto it = seen.find(id);
    if (it == seen.end()) {
      problem(absl::StrCat(who, "id ", id, " is in no bucket (a false negative)"));
    } else if (it->second != 1) {
      problem(absl::StrCat(who, "id ", id, " is in ", it->second, " buckets"));
    }
  }
  if (seen.size() != ids.size()) {
    problem(absl::StrCat(who, seen.size(), " ids in buckets, ", ids.size(), " visible"));
  }
}

}  // namespace shoal::tenants
