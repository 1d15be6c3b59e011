#include "tenants/tenant_tree.h"

#include <map>
#include <random>
#include <set>

#include "base/test_seed.h"
#include "gtest/gtest.h"
#include "index/clustering/centroid_tree.h"
#include "index/clustering/kmeans.h"

namespace shoal::tenants {
namespace {

index::CentroidTree SmallTree(size_t leaves, std::mt19937_64& rng) {
  const size_t n = 4000, d = 4;
  std::vector<float> x(n * d);
  std::normal_distribution<float> g;
  for (float& v : x) v = g(rng);
  auto backend = index::MakeDefaultClusteringBackend(0);
  index::TreeOptions o;
  o.num_leaves = leaves;
  o.branching = 4;
  o.threads = 1;
  auto tree = index::CentroidTree::Build(*backend, x.data(), n, d, o);
  EXPECT_TRUE(tree.ok()) << tree.status();
  return *std::move(tree);
}

// The tree reads a sparse tenant's ids from the access table: the tests keep one beside it,
// changed before Attach and after Detach, as db/ does.
struct Tenants {
  explicit Tenants(uint32_t cap) : tree(&access, cap) {}
  Tenants(const index::CentroidTree& shape, uint32_t cap) : tree(shape, &access, cap) {}
  void Attach(TenantId t, uint64_t id, uint32_t leaf) {
    access.AddTenant(t);
    access.Grant(id, t);
    tree.Attach(t, id, leaf);
  }
  void Detach(TenantId t, uint64_t id) {
    tree.Detach(t, id);
    access.Revoke(id, t);
  }
  AccessTable access;
  TenantTree tree;
};

// A scope of a tenant past the cap lists its ids by leaf (made by the first scope that asks
// after a change, kept for the next): each leaf's are exactly the model's, each once.
void ExpectListsByLeaf(const TenantTree& tree, TenantId t,
                       const std::map<uint64_t, uint32_t>& model) {
  std::map<uint32_t, std::set<uint64_t>> want;
  for (const auto& [id, leaf] : model) want[leaf].insert(id);
  for (int scopes = 0; scopes < 2; ++scopes) {  // the second reads what the first made
    const TenantScope scope(&tree, t);
    ASSERT_EQ(scope.ListsMembers(), model.size() > tree.cap());
    if (!scope.ListsMembers()) return;
    for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
      std::vector<uint64_t> got;
      ASSERT_TRUE(scope.AppendLeafMembers(l, &got));
      const std::set<uint64_t> distinct(got.begin(), got.end());
      ASSERT_EQ(distinct.size(), got.size()) << "leaf " << l;
      ASSERT_EQ(distinct, want[l]) << "leaf " << l;
    }
  }
  // Ids the searched index does not hold yet (a write buffer's) are left out, and a leaf's ids
  // are appended after what the list held.
  const TenantScope scope(&tree, t, [](uint64_t id) { return id % 3 == 0; });
  for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
    std::vector<uint64_t> got = {~uint64_t{0}};
    ASSERT_TRUE(scope.AppendLeafMembers(l, &got));
    ASSERT_EQ(got.front(), ~uint64_t{0}) << "leaf " << l;
    std::set<uint64_t> indexed;
    for (uint64_t id : want[l]) {
      if (id % 3 != 0) indexed.insert(id);
    }
    ASSERT_EQ(got.size(), indexed.size() + 1) << "leaf " << l;
    ASSERT_EQ(std::set<uint64_t>(got.begin() + 1, got.end()), indexed) << "leaf " << l;
  }
}

void ExpectConsistent(const TenantTree& tree, TenantId t,
                      const std::map<uint64_t, uint32_t>& model) {
  std::vector<std::pair<uint64_t, uint32_t>> ids(model.begin(), model.end());
  std::vector<std::string> problems;
  tree.Check(t, ids, [&](std::string p) { problems.push_back(std::move(p)); });
  ASSERT_TRUE(problems.empty()) << problems.front();
  // The shortlists made from the counts: none over the cap, each id in exactly one, except the
  // ids of dense leaves, which are in none.
  std::map<uint64_t, int> seen;
  tree.ForEachShortlist(t, [&](uint32_t node, const TenantTree::IdSet& list) {
    EXPECT_LE(list.size(), tree.cap()) << "shortlist at node " << node;
    list.ForEach([&](uint64_t id) { ++seen[id]; });
  });
  std::set<uint32_t> dense;
  tree.ForEachDenseLeaf(t, [&](uint32_t leaf) { dense.insert(leaf); });
  size_t listed = 0;
  for (const auto& [id, leaf] : model) {
    const auto it = seen.find(id);
    const int n = it == seen.end() ? 0 : it->second;
    ASSERT_EQ(n, dense.contains(leaf) ? 0 : 1) << "id " << id << " of leaf " << leaf;
    listed += n;
  }
  ASSERT_EQ(seen.size(), listed);  // no id the tenant does not see
  ExpectListsByLeaf(tree, t, model);
}

// Random attach / detach against a model; the structure is checked after every step: counts,
// no shortlist over the cap, every id in exactly one shortlist or a dense leaf.
TEST(TenantTreeTest, AttachAndDetachKeepEveryIdInExactlyOneBucket) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  const TenantTree& tree = tenants.tree;
  std::map<TenantId, std::map<uint64_t, uint32_t>> model;
  for (int step = 0; step < 6000; ++step) {
    const TenantId t = 1 + rng() % 3;
    auto& m = model[t];
    // Grow to a few hundred ids, then shrink back to nothing: overflow then merges.
    const bool grow = (step / 1500) % 2 == 0;
    if (grow || m.empty()) {
      const uint64_t id = rng() % 100000;
      if (m.contains(id)) continue;
      // Skewed leaves, so that some become dense; an id has one leaf whatever the tenant.
      const uint32_t l = id % 4 == 0 ? (id / 4) % tree.num_leaves() : id % 3;
      m[id] = l;
      tenants.Attach(t, id, l);
    } else {
      auto it = m.begin();
      std::advance(it, rng() % m.size());
      tenants.Detach(t, it->first);
      m.erase(it);
    }
    ExpectConsistent(tree, t, m);
    if (HasFatalFailure()) return;
    for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
      bool has = false;
      for (const auto& [id, il] : m) has |= il == l;
      ASSERT_EQ(tree.Reaches(t, l), has) << "leaf " << l;
    }
  }
}

// Batched Attach / Detach (a Grant or Revoke of many keys): the access table changes for the
// whole batch first, then the tree once; small batches go id by id, large ones rebuild the
// tenant. Either way the structure is what the model says after every batch.
TEST(TenantTreeTest, BatchedAttachAndDetachKeepTheStructure) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  TenantTree& tree = tenants.tree;
  std::map<TenantId, std::map<uint64_t, uint32_t>> model;
  for (int step = 0; step < 400; ++step) {
    const TenantId t = 1 + rng() % 3;
    tenants.access.AddTenant(t);
    auto& m = model[t];
    // Batches from 1 to ~300 ids: past the rebuild threshold and below it, across the cap.
    const size_t n = 1 + rng() % (rng() % 2 == 0 ? 12 : 300);
    std::vector<uint64_t> ids;
    std::vector<uint32_t> leaves;
    if (rng() % 2 == 0 || m.empty()) {
      for (size_t i = 0; i < n; ++i) {
        const uint64_t id = rng() % 20000;
        if (m.contains(id)) continue;
        const uint32_t l = id % 4 == 0 ? (id / 4) % tree.num_leaves() : id % 3;
        m[id] = l;
        tenants.access.Grant(id, t);
        ids.push_back(id);
        leaves.push_back(l);
      }
      tree.Attach(t, ids, leaves);
    } else {
      for (size_t i = 0; i < n && !m.empty(); ++i) {
        auto it = m.begin();
        std::advance(it, rng() % m.size());
        tenants.access.Revoke(it->first, t);
        ids.push_back(it->first);
        m.erase(it);
      }
      tree.Detach(t, ids);
    }
    ExpectConsistent(tree, t, m);
    if (HasFatalFailure()) return;
    for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
      bool has = false;
      for (const auto& [id, il] : m) has |= il == l;
      ASSERT_EQ(tree.Reaches(t, l), has) << "leaf " << l << " step " << step;
    }
  }
}

TEST(TenantTreeTest, SparseTenantIsOneRootShortlistAndDropForgetsIt) {
  Tenants tenants(/*cap=*/4);
  TenantTree& tree = tenants.tree;
  for (uint64_t id = 0; id < 3; ++id) tenants.Attach(7, id, 0);
  int lists = 0;
  tree.ForEachShortlist(7, [&](uint32_t node, const TenantTree::IdSet& ids) {
    EXPECT_EQ(node, 0u);
    EXPECT_EQ(ids.size(), 3u);
    ++lists;
  });
  EXPECT_EQ(lists, 1);
  for (uint64_t id = 3; id < 6; ++id) tenants.Attach(7, id, 0);
  int dense = 0;
  tree.ForEachDenseLeaf(7, [&](uint32_t) { ++dense; });
  EXPECT_EQ(dense, 1);  // one node: over the cap it is a dense leaf
  tree.DropTenant(7);   // and from the table, as db/ does: a sparse tenant's count is the table's
  tenants.access.RemoveTenant(7);
  EXPECT_FALSE(tree.Reaches(7, 0));
  EXPECT_EQ(tree.Count(7, 0), 0u);
}

TEST(TenantTreeTest, AGrantThenRevokeRestoresTheStructure) {
  std::mt19937_64 rng(1);
  const index::CentroidTree shape = SmallTree(20, rng);
  Tenants tenants(shape, 4);
  std::map<uint64_t, uint32_t> m;
  for (uint64_t id = 0; id < 30; ++id) {
    m[id] = id % 5;
    tenants.Attach(1, id, id % 5);
  }
  tenants.Attach(1, 99, 2);
  tenants.Detach(1, 99);
  ExpectConsistent(tenants.tree, 1, m);
}

// The scope a tenant's SPANN search navigates with: nodes and postings of its sub-tree only, and
// per-leaf weights (its exact counts) once it outgrows one shortlist.
TEST(TenantTreeTest, ScopePrunesToTheSubTreeAndWeighsLeavesByCount) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  const TenantTree& tree = tenants.tree;
  std::map<uint32_t, uint32_t> per_leaf;
  auto attach = [&](uint64_t id) {
    const uint32_t leaf = (id * 7) % 13;  // leaves 0..12 only
    tenants.Attach(1, id, leaf);
    ++per_leaf[leaf];
  };
  for (uint64_t id = 0; id < 5; ++id) attach(id);
  {
    const TenantScope sparse(&tree, 1);
    EXPECT_FALSE(sparse.weighted());  // one root shortlist: no counts below the root
    for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
      EXPECT_EQ(sparse.AllowsPosting(l, l), per_leaf.contains(l)) << "leaf " << l;
    }
  }
  for (uint64_t id = 5; id < 200; ++id) attach(id);
  const TenantScope scope(&tree, 1);
  EXPECT_TRUE(scope.weighted());
  for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
    const uint32_t want = per_leaf.contains(l) ? per_leaf[l] : 0;
    EXPECT_EQ(scope.LeafWeight(l), want) << "leaf " << l;
    EXPECT_EQ(scope.AllowsPosting(/*posting=*/l, l), want > 0) << "leaf " << l;
    EXPECT_EQ(scope.AllowsNode(shape.leaf_node(l)), want > 0) << "leaf " << l;
  }
  EXPECT_TRUE(scope.AllowsNode(shape.root()));
  EXPECT_EQ(scope.LeafWeight(tree.num_leaves()), 0u);  // out of range: nothing
  // 200 vectors in per_leaf.size() leaves.
  EXPECT_EQ(scope.Extent(), (std::pair<uint64_t, uint32_t>{200, per_leaf.size()}));
  const TenantScope nobody(&tree, 2);
  EXPECT_FALSE(nobody.weighted());
  EXPECT_EQ(nobody.Extent(), (std::pair<uint64_t, uint32_t>{0, 0}));
  EXPECT_FALSE(nobody.AllowsNode(shape.root()));
}

// A query's scope takes over the arrays the last scope on its thread left behind: a tenant's
// scope made after a larger tenant's sees only its own leaves and counts, none of the other's.
TEST(TenantTreeTest, AScopeAfterAnotherSeesOnlyItsOwnTenant) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  const TenantTree& tree = tenants.tree;
  std::map<uint32_t, uint32_t> big_leaves, small_leaves;
  for (uint64_t id = 0; id < 400; ++id) {  // tenant 1 in every leaf
    tenants.Attach(1, id, static_cast<uint32_t>(id % tree.num_leaves()));
    ++big_leaves[static_cast<uint32_t>(id % tree.num_leaves())];
  }
  for (uint64_t id = 400; id < 430; ++id) {  // tenant 2 in leaves 3, 8, 13
    const uint32_t leaf = 3 + 5 * static_cast<uint32_t>(id % 3);
    tenants.Attach(2, id, leaf);
    ++small_leaves[leaf];
  }
  for (int round = 0; round < 3; ++round) {
    for (const auto& [t, want] : {std::pair{1, &big_leaves}, std::pair{2, &small_leaves}}) {
      const TenantScope scope(&tree, static_cast<TenantId>(t));
      ASSERT_TRUE(scope.weighted());
      std::set<uint32_t> leaves(scope.Leaves().begin(), scope.Leaves().end());
      EXPECT_EQ(leaves.size(), scope.Leaves().size()) << "tenant " << t;
      std::set<uint32_t> expected;
      for (const auto& [leaf, n] : *want) expected.insert(leaf);
      EXPECT_EQ(leaves, expected) << "tenant " << t;
      for (uint32_t l = 0; l < tree.num_leaves(); ++l) {
        EXPECT_EQ(scope.LeafWeight(l), want->contains(l) ? want->at(l) : 0u)
            << "tenant " << t << " leaf " << l;
        std::vector<uint64_t> listed;
        ASSERT_TRUE(scope.AppendLeafMembers(l, &listed));
        EXPECT_EQ(listed.size(), want->contains(l) ? want->at(l) : 0u)
            << "tenant " << t << " leaf " << l;
        for (uint64_t id : listed) EXPECT_EQ(id < 400, t == 1) << "tenant " << t << " id " << id;
      }
    }
  }
}

// A tenant's ids by leaf take 3 bytes an id while its ids span under 2^24, 4 past that: both
// list exactly each leaf's ids (the 3-byte form masks the next id's byte off its load).
TEST(TenantTreeTest, IdsByLeafTakeThreeBytesEachBelow2To24IdsAndFourAbove) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  const TenantTree& tree = tenants.tree;
  std::map<uint64_t, uint32_t> near, far;  // tenant 1: ids under 2^24; tenant 2: up to 2^30
  while (near.size() < 2000) {
    const uint64_t id = rng() % (uint64_t{1} << 24);
    if (near.contains(id)) continue;
    near[id] = static_cast<uint32_t>(rng() % tree.num_leaves());
    tenants.Attach(1, id, near[id]);
  }
  while (far.size() < 2000) {
    const uint64_t id = (uint64_t{1} << 24) + rng() % (uint64_t{1} << 30);
    if (far.contains(id) || near.contains(id)) continue;
    far[id] = static_cast<uint32_t>(rng() % tree.num_leaves());
    tenants.Attach(2, id, far[id]);
  }
  const size_t before = tree.MemoryBytes();
  ExpectListsByLeaf(tree, 1, near);
  const size_t three = tree.MemoryBytes() - before;
  ExpectListsByLeaf(tree, 2, far);
  const size_t four = tree.MemoryBytes() - before - three;
  EXPECT_GE(three, 3 * near.size());
  EXPECT_LT(three, 3 * near.size() + 256);  // the struct and a byte of padding
  EXPECT_GE(four, 4 * far.size());
  EXPECT_LT(four, 4 * far.size() + 256);
}

// A rebuild from the access table makes the tree that attaching the same ids one by one made,
// and a sparse tenant's ids are stored once (in the access table): the tree keeps a count.
TEST(TenantTreeTest, RebuildMatchesAttachesAndSparseTenantsStoreNoIds) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  std::map<TenantId, std::map<uint64_t, uint32_t>> model;
  std::map<uint64_t, uint32_t> leaf_of;
  for (int i = 0; i < 3000; ++i) {
    const TenantId t = 1 + rng() % 40;  // sizes from 0 to ~150: sparse and not
    const uint64_t id = rng() % 5000;
    const uint32_t leaf = static_cast<uint32_t>(id % tenants.tree.num_leaves());
    if (model[t].contains(id) || (t % 4 == 0 && model[t].size() >= 8)) continue;
    model[t][id] = leaf;
    leaf_of[id] = leaf;
    tenants.Attach(t, id, leaf);
  }
  std::vector<uint64_t> ids;
  std::vector<uint32_t> leaves;
  for (const auto& [id, leaf] : leaf_of) {
    ids.push_back(id);
    leaves.push_back(leaf);
  }
  TenantTree rebuilt(shape, &tenants.access, /*cap=*/8);
  rebuilt.Rebuild(ids, leaves);
  for (const auto& [t, m] : model) {
    ExpectConsistent(tenants.tree, t, m);
    ExpectConsistent(rebuilt, t, m);
    if (HasFatalFailure()) return;
    for (uint32_t l = 0; l < shape.num_leaves(); ++l) {
      ASSERT_EQ(rebuilt.Reaches(t, l), tenants.tree.Reaches(t, l)) << "tenant " << t;
    }
  }
  // 1,000 sparse tenants more, 8 ids each: nothing stored in the tree (their counts are the
  // access table's; a hash slot each before, ~2 bytes an id, a block and a bucket before that).
  const size_t before = tenants.tree.MemoryBytes();
  for (TenantId t = 1000; t < 2000; ++t) {
    for (uint64_t id = 0; id < 8; ++id) tenants.Attach(t, id, 0);
  }
  EXPECT_EQ(tenants.tree.MemoryBytes(), before);
  EXPECT_TRUE(tenants.tree.Reaches(1500, 0));
  EXPECT_FALSE(tenants.tree.Reaches(1500, 1));
}

// A tenant past the cap costs its counts (8 bytes per node it reaches), not a second copy of its
// ids: a second tenant seeing the same 2,000 ids adds well under the ~12 KB its shortlists and
// dense leaves took as stored sets.
TEST(TenantTreeTest, ATenantPastTheCapStoresCountsNotIds) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  for (uint64_t id = 0; id < 2000; ++id) {
    tenants.Attach(1, id, static_cast<uint32_t>(id % tenants.tree.num_leaves()));
  }
  const size_t one = tenants.tree.MemoryBytes();
  for (uint64_t id = 0; id < 2000; ++id) {
    tenants.Attach(2, id, static_cast<uint32_t>(id % tenants.tree.num_leaves()));
  }
  const size_t second = tenants.tree.MemoryBytes() - one;
  EXPECT_LT(second, 1500u) << second;
  std::map<uint64_t, uint32_t> model;
  for (uint64_t id = 0; id < 2000; ++id) model[id] = id % tenants.tree.num_leaves();
  ExpectConsistent(tenants.tree, 2, model);
}

// A tenant past the cap pays 4 bytes a (node, count) pair (16-bit nodes and counts; 8 bytes a
// pair before), plus its entry in the tenants' map.
TEST(TenantTreeTest, ATenantsNodeCountsCostFourBytesAPair) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(200, rng);
  Tenants tenants(shape, /*cap=*/8);
  // Tenant 1 first: the ids' leaves are stored once, whatever the tenants.
  for (uint64_t id = 0; id < 3000; ++id) {
    tenants.Attach(1, id, static_cast<uint32_t>(id % tenants.tree.num_leaves()));
  }
  const size_t before = tenants.tree.MemoryBytes();
  for (uint64_t id = 0; id < 3000; ++id) {
    tenants.Attach(2, id, static_cast<uint32_t>(id % tenants.tree.num_leaves()));
  }
  size_t pairs = 0;  // nodes it reaches: a count each
  for (uint32_t node = 0; node < shape.num_nodes(); ++node) {
    pairs += tenants.tree.Count(2, node) > 0;
  }
  ASSERT_GT(pairs, 200u);
  const size_t added = tenants.tree.MemoryBytes() - before;
  EXPECT_LE(added, 5 * pairs + 256) << added << " bytes for " << pairs << " counts";
}

// Counts of 2^16 or more (a node holding that many of a tenant's vectors) widen that tenant's
// counts in place: every count stays exact, and shrinking back keeps them so.
TEST(TenantTreeTest, CountsPast65535StayExact) {
  std::mt19937_64 rng(base::TestSeed());
  const index::CentroidTree shape = SmallTree(40, rng);
  Tenants tenants(shape, /*cap=*/8);
  std::map<uint64_t, uint32_t> model;
  const uint32_t leaves = tenants.tree.num_leaves();
  for (uint64_t id = 0; id < 70000; ++id) {
    const uint32_t leaf = id < 66000 ? 3 : static_cast<uint32_t>(id % leaves);
    tenants.Attach(1, id, leaf);
    model[id] = leaf;
  }
  EXPECT_EQ(tenants.tree.Count(1, shape.root()), 70000u);
  uint32_t in_leaf3 = 0;
  for (const auto& [id, leaf] : model) in_leaf3 += leaf == 3;
  EXPECT_EQ(tenants.tree.Count(1, shape.leaf_node(3)), in_leaf3);
  ExpectConsistent(tenants.tree, 1, model);
  for (uint64_t id = 0; id < 10000; ++id) {
    tenants.Detach(1, id);
    model.erase(id);
  }
  EXPECT_EQ(tenants.tree.Count(1, shape.root()), 60000u);
  ExpectConsistent(tenants.tree, 1, model);
}

}  // namespace
}  // namespace shoal::tenants
