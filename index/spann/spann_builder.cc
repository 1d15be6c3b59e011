#include "index/spann/spann_builder.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/run_on_threads.h"
#include "base/status_macros.h"
#include "index/clustering/centroid_tree.h"
#include "index/postings/posting_entries.h"
#include "index/quantization/quantizer.h"
#include "index/spann/posting_size.h"
#include "storage/pages/posting_file.h"
#include "storage/pages/vector_file.h"

namespace shoal::index {
namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Squared L2 between two leaf centroids, memoised per vector's candidate list.
float CentroidDistance(const CentroidTree& tree, uint32_t a, uint32_t b) {
  return L2Sqr(tree.centroid(tree.leaf_node(a)), tree.centroid(tree.leaf_node(b)), tree.dim());
}

// Boundary replication by SPANN's RNG rule: walk the candidate leaves nearest first; accept leaf c
// only if no accepted c' has rng_factor * d(c, c') <= d(x, c). Distances are squared L2.
// Returns the accepted leaves, primary first.
void ChooseReplicas(const CentroidTree& tree, const uint32_t* leaves, const float* dists, size_t m,
                    const SpannOptions& o, std::vector<uint32_t>* out) {
  out->clear();
  if (m == 0 || leaves[0] == UINT32_MAX) return;
  out->push_back(leaves[0]);
  const float limit = o.closure * std::max(dists[0], 1e-12f);
  for (size_t j = 1; j < m && out->size() < o.replicas; ++j) {
    if (leaves[j] == UINT32_MAX || dists[j] > limit) break;
    bool accept = true;
    for (uint32_t c : *out) {
      if (o.rng_factor * CentroidDistance(tree, leaves[j], c) <= dists[j]) {
        accept = false;
        break;
      }
    }
    if (accept) out->push_back(leaves[j]);
  }
}

struct Member {
  uint32_t row;    // index into the input
  float distance;  // to the posting's centroid
  bool primary;
};

// Members of each posting, capped: over-full postings drop their farthest replica entries. The
// replicas are chosen on `threads` threads (0: one per core; each vector's choice is its own),
// then listed in vector order.
std::vector<std::vector<Member>> AssignMembers(const CentroidTree& tree, const uint32_t* leaves,
                                               const float* dists, size_t n, size_t m,
                                               const SpannOptions& o, uint32_t cap,
                                               uint32_t threads) {
  // Per vector, the candidate ranks (into its m) of its replicas, primary first; kNoRank after.
  constexpr uint8_t kNoRank = 0xFF;
  const size_t replicas = std::min<size_t>(o.replicas, m);
  std::vector<uint8_t> ranks(n * replicas, kNoRank);
  const uint32_t cores = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::clamp<size_t>(n / 4096, 1, cores);
  base::RunOnThreads(workers, [&](size_t t) {
    std::vector<uint32_t> chosen;
    for (size_t i = n * t / workers; i < n * (t + 1) / workers; ++i) {
      ChooseReplicas(tree, leaves + i * m, dists + i * m, m, o, &chosen);
      for (size_t r = 0; r < chosen.size(); ++r) {
        uint8_t j = 0;
        while (leaves[i * m + j] != chosen[r]) ++j;
        ranks[i * replicas + r] = j;
      }
    }
  });
  std::vector<std::vector<Member>> members(tree.num_leaves());
  for (size_t i = 0; i < n; ++i) {
    for (size_t r = 0; r < replicas && ranks[i * replicas + r] != kNoRank; ++r) {
      const size_t j = i * m + ranks[i * replicas + r];
      members[leaves[j]].push_back({static_cast<uint32_t>(i), dists[j], r == 0});
    }
  }
  for (auto& list : members) {
    if (list.size() <= cap) continue;
    std::stable_sort(list.begin(), list.end(), [](const Member& a, const Member& b) {
      if (a.primary != b.primary) return a.primary;
      return a.distance < b.distance;
    });
    size_t keep = cap;
    while (keep < list.size() && list[keep].primary) ++keep;  // primaries always stay
    list.resize(keep);
  }
  return members;
}

// The payload of posting p: full vectors, or (with a quantizer) ids + |x|^2 + codes relative to
// the posting's centroid.
std::vector<uint8_t> PostingPayload(const SpannBuildInput& in, const std::vector<Member>& members,
                                    const float* centroid, const PostingQuantizer* quantizer) {
  if (quantizer == nullptr) {
    std::vector<uint64_t> ids;
    std::vector<const float*> vecs;
    for (const Member& mb : members) {
      ids.push_back(in.ids[mb.row]);
      vecs.push_back(in.vectors + size_t{mb.row} * in.dim);
    }
    return EncodePostingEntries(ids, vecs, in.dim);
  }
  QuantizedPosting q;
  q.code_bytes = quantizer->code_bytes();
  q.codes.resize(members.size() * q.code_bytes);
  for (size_t i = 0; i < members.size(); ++i) {
    const float* x = in.vectors + size_t{members[i].row} * in.dim;
    q.ids.push_back(in.ids[members[i].row]);
    q.sq_norms.push_back(InnerProduct(x, x, in.dim));
    quantizer->Encode(x, centroid, q.codes.data() + i * q.code_bytes);
  }
  return EncodeQuantizedEntries(q, /*norms=*/in.metric == Metric::kInnerProduct);
}

absl::Status WritePostings(const SpannBuildInput& in,
                           const std::vector<std::vector<Member>>& members,
                           const CentroidTree& tree, const PostingQuantizer* quantizer,
                           const std::string& path, std::vector<storage::PostingRow>* rows) {
  SHOAL_ASSIGN_OR_RETURN(auto writer, storage::PostingFileWriter::Create(path, in.fs));
  const size_t every = std::max<size_t>(1, members.size() / 64);
  for (uint32_t p = 0; p < members.size(); ++p) {
    if (in.progress && p % every == 0) in.progress("writing", double(p) / members.size());
    const float* centroid = tree.centroid(tree.leaf_node(p));
    std::vector<uint8_t> payload = PostingPayload(in, members[p], centroid, quantizer);
    SHOAL_ASSIGN_OR_RETURN(storage::Extent e, writer->Append(p, payload));
    rows->push_back(
        {p, e.first_page, e.num_pages, e.bytes, static_cast<uint32_t>(members[p].size())});
  }
  return writer->Sync();
}

absl::Status WriteVectors(const SpannBuildInput& in, const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(auto file, storage::VectorFile::Create(path, static_cast<uint32_t>(in.dim),
                                                                storage::IoBackend::kPread, in.fs));
  for (size_t i = 0; i < in.ids.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(file->Put(in.ids[i], in.vectors + i * in.dim));
  }
  return file->Sync();
}

// The m nearest leaves of each of the n vectors, closest first (n x m leaves and distances).
absl::Status AssignNearestLeaves(const CentroidTree& tree, const float* vectors, size_t n,
                                 size_t dim, size_t m, ClusteringBackend& backend, uint32_t threads,
                                 uint32_t* leaves, float* dists) {
  if (backend.AssignsOnDevice(n, tree.num_leaves(), dim, m)) {
    // Exact over all leaves: on a device that costs less than the CPU's descents below.
    return backend.AssignTopM(vectors, n, tree.leaf_centroids(), tree.num_leaves(), dim, m, nullptr,
                              leaves, dists);
  }
  // A wider beam than searches use: replica choice is paid once, at build time. The points go
  // down grouped by the leaf the build gave them (a counting sort of point_leaf()): neighbours
  // descend through the same nodes, whose centroid rows then stay in cache between them.
  std::vector<uint32_t> order;
  const std::vector<uint32_t>& built = tree.point_leaf();
  if (built.size() == n) {
    std::vector<uint32_t> start(tree.num_leaves() + 1, 0);
    for (uint32_t leaf : built) ++start[leaf + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[start[built[i]]++] = static_cast<uint32_t>(i);
  }
  return tree.NearestLeavesBatch(vectors, n, m, std::max<size_t>(16, 2 * m), threads, leaves, dists,
                                 order.empty() ? nullptr : order.data());
}

}  // namespace

absl::StatusOr<SpannBuildOutput> BuildSpann(const SpannBuildInput& in, const SpannOptions& options,
                                            const std::string& dir, ClusteringBackend& backend,
                                            uint32_t threads) {
  const size_t n = in.ids.size();
  if (n == 0) return absl::InvalidArgumentError("collection: cannot build an index of 0 vectors");
  if (in.fs == nullptr) return absl::InvalidArgumentError("BuildSpann: no file system");
  auto t0 = std::chrono::steady_clock::now();
  SpannOptions o = options;
  if (o.centroids_from_data) {
    SHOAL_ASSIGN_OR_RETURN(PostingSizeChoice choice,
                           ChoosePostingSize(backend, in.vectors, n, in.dim, in.metric, o));
    o.centroid_ratio = choice.centroid_ratio;
  }
  TreeOptions tree_options;
  tree_options.num_leaves = std::clamp<size_t>(static_cast<size_t>(n * o.centroid_ratio), 1, n);
  tree_options.branching = o.branching;
  tree_options.iterations = o.iterations;
  tree_options.seed = o.seed;
  tree_options.threads = threads;
  auto phase = [&](std::string_view name) {
    if (in.progress) in.progress(name, 0);
  };
  phase("clustering");
  SHOAL_ASSIGN_OR_RETURN(CentroidTree tree,
                         CentroidTree::Build(backend, in.vectors, n, in.dim, tree_options));

  // Candidate postings per vector: a few more than the replica count, for the RNG rule to skip.
  const size_t m = std::min<size_t>(tree.num_leaves(), std::max<uint32_t>(o.replicas * 2, 1));
  std::vector<uint32_t> leaves(n * m);
  std::vector<float> dists(n * m);
  phase("assigning");
  SHOAL_RETURN_IF_ERROR(AssignNearestLeaves(tree, in.vectors, n, in.dim, m, backend, threads,
                                            leaves.data(), dists.data()));
  const uint32_t cap = o.posting_cap != 0 ? o.posting_cap
                                          : static_cast<uint32_t>(std::max<size_t>(
                                                16, 4 * (n * o.replicas / 2) / tree.num_leaves()));
  auto members = AssignMembers(tree, leaves.data(), dists.data(), n, m, o, cap, threads);
  SpannBuildOutput out;
  out.seconds_clustering = Since(t0);

  t0 = std::chrono::steady_clock::now();
  std::unique_ptr<PostingQuantizer> quantizer;
  if (o.quant != "none") {
    phase("encoding");
    SHOAL_ASSIGN_OR_RETURN(quantizer, MakeQuantizer(o.quant, in.dim, o.seed));
    // Train on the residuals of (up to) 65536 primary entries.
    std::vector<float> sample;
    const size_t step = std::max<size_t>(1, n / 65536);
    for (size_t i = 0; i < n; i += step) {
      const float* x = in.vectors + i * in.dim;
      const float* c = tree.centroid(tree.leaf_node(leaves[i * m]));
      for (size_t j = 0; j < in.dim; ++j) sample.push_back(x[j] - c[j]);
    }
    quantizer->Train(sample.data(), sample.size() / in.dim);
    SHOAL_RETURN_IF_ERROR(
        storage::WriteFileSynced(*in.fs, dir + "/" + kQuantizerFileName, quantizer->Serialize()));
  }
  SHOAL_RETURN_IF_ERROR(WritePostings(in, members, tree, quantizer.get(),
                                      dir + "/" + kPostingFileName, &out.postings));
  if (in.progress) in.progress("writing", 1);
  SHOAL_RETURN_IF_ERROR(WriteVectors(in, dir + "/" + kVectorFileName));
  SHOAL_RETURN_IF_ERROR(
      storage::WriteFileSynced(*in.fs, dir + "/" + kCentroidFileName, tree.Serialize()));
  out.seconds_writing = Since(t0);

  out.manifest.options = o;
  out.manifest.dimension = static_cast<uint32_t>(in.dim);
  out.manifest.metric = in.metric;
  out.manifest.generation = in.generation;
  out.manifest.num_vectors = n;
  out.manifest.indexed_below = in.indexed_below;
  out.manifest.num_postings = static_cast<uint32_t>(tree.num_leaves());
  out.manifest.posting_cap = cap;
  return out;
}

}  // namespace shoal::index
