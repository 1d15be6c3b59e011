// ClusteringBackend implementations: the CPU backend (fused AVX-512 blocked kernel, or a plain
// per-pair scan on AVX2/scalar CPUs) and the GPU backend over index/gpu.
//
// AVX-512 path: the centroids are shifted by their mean (distances are translation-invariant
// and the shift keeps ||c||^2 - 2<x,c> from cancelling catastrophically on data with a large
// offset, e.g. uint8 pixels), packed into 48-wide panels, and scored 8 points x 48 centroids at a
// time by ScoreBlockAvx512 (the FlatIndex kernel) with bias ||c||^2 + bias[c] and scale -2. The
// kernel's mask says which scores beat each point's current m+2-th best, and of those only the
// panel's best m+2 touch the running top list. Centroid tiles of ~1 MiB stay
// in L2 while every point block of a thread's chunk streams past them. The m+2 candidates are
// then re-scored with the exact L2 kernel and the best m (by exact distance + bias) reported,
// so reported distances are exact and near-ties are ranked on exact values.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/run_on_threads.h"
#include "base/status_macros.h"
#include "index/clustering/gpu/gpu_kmeans.h"
#include "index/clustering/kmeans.h"
#include "index/distance/distance_internal.h"
#include "index/distance/finite_check.h"

namespace shoal::index {
namespace {

using internal::KernelLevelId;
using internal::kPanelWidth;
using internal::kQueryBlock;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// Candidates kept beyond m by the expanded-form kernel, re-ranked exactly.
constexpr size_t kRerankExtra = 2;
constexpr size_t kMinPointsPerThread = 512;
constexpr size_t kChunkPoints = 2048;
constexpr size_t kTileBytes = size_t{1} << 20;

// A point's running best list, sorted by (score, id); `keep` entries, worst last.
struct TopList {
  float* score;
  uint32_t* id;
  size_t keep;
  bool Beats(float s, uint32_t c) const {
    return s < score[keep - 1] || (s == score[keep - 1] && c < id[keep - 1]);
  }
  void Insert(float s, uint32_t c) {
    size_t i = keep - 1;
    while (i > 0 && (score[i - 1] > s || (score[i - 1] == s && id[i - 1] > c))) {
      score[i] = score[i - 1];
      id[i] = id[i - 1];
      --i;
    }
    score[i] = s;
    id[i] = c;
  }
};

struct Problem {
  const float* points;
  size_t n;
  const float* centroids;
  size_t k;
  size_t d;
  size_t m;
  const float* bias;
  uint32_t* labels;
  float* distances;
};

// Centroids shifted by their mean and packed into panels, with per-lane ||c'||^2 + bias.
struct PackedCentroids {
  std::vector<float> shift;   // d
  std::vector<float> panels;  // num_panels x d x kPanelWidth
  std::vector<float> lane_bias;
  std::vector<float> lane_norm;  // per centroid: at least ||c'|| (Rerank's bound)
  size_t num_panels = 0;
};

PackedCentroids PackCentroids(const Problem& p) {
  PackedCentroids pc;
  std::vector<double> mean(p.d, 0.0);
  for (size_t c = 0; c < p.k; ++c) {
    for (size_t j = 0; j < p.d; ++j) mean[j] += p.centroids[c * p.d + j];
  }
  pc.shift.resize(p.d);
  for (size_t j = 0; j < p.d; ++j) pc.shift[j] = static_cast<float>(mean[j] / p.k);
  pc.num_panels = (p.k + kPanelWidth - 1) / kPanelWidth;
  pc.panels.resize(pc.num_panels * p.d * kPanelWidth);
  pc.lane_bias.assign(pc.num_panels * kPanelWidth, kInf);
  pc.lane_norm.assign(p.k, 0.0f);
  std::vector<float> rows(kPanelWidth * p.d);
  for (size_t panel = 0; panel < pc.num_panels; ++panel) {
    const size_t first = panel * kPanelWidth;
    const size_t count = std::min(kPanelWidth, p.k - first);
    for (size_t r = 0; r < count; ++r) {
      const float* c = p.centroids + (first + r) * p.d;
      float norm = 0;
      double exact = 0;
      for (size_t j = 0; j < p.d; ++j) {
        rows[r * p.d + j] = c[j] - pc.shift[j];
        norm += rows[r * p.d + j] * rows[r * p.d + j];
        exact += double{rows[r * p.d + j]} * rows[r * p.d + j];
      }
      pc.lane_bias[first + r] = norm + (p.bias != nullptr ? p.bias[first + r] : 0.0f);
      // Rounded up past the double sum's and the float conversion's errors.
      pc.lane_norm[first + r] = static_cast<float>(std::sqrt(exact) * (1 + 0x1p-20));
    }
    internal::PackPanelAvx512(rows.data(), count, p.d, &pc.panels[panel * p.d * kPanelWidth]);
  }
  return pc;
}

// Whether the expanded-form scores alone prove that a point's first candidate has the least
// exact cost (L2Sqr + bias) of its `keep` (m = 1), so that the others need no exact score. With
// x', c' the point and centroid less the shift (as packed), the score s = ||c'||^2 + bias -
// 2 x'.c' and the exact cost differ by ||x'||^2 (the same for every candidate) plus an error
// within slack * ((||x'|| + ||c'||)^2 + |bias|): each of the float sums (the dot product, the
// norm, the exact L2Sqr) is within gamma(d + 3) = (d + 3) u / (1 - (d + 3) u) of its terms'
// magnitude, and shifting x and c in float moves x - c by at most u (||x'|| + ||c'||); the slack
// is four times the sum of these. ||x'|| is bounded from the first candidate's exact distance,
// ||x'|| <= ||x - c_1|| + ||c_1'|| (both rounded up). Proven when every other candidate's score
// exceeds the first's by more than the two errors: then its exact cost is strictly larger.
bool FirstIsProven(const Problem& p, const PackedCentroids& pc, const uint32_t* ids,
                   const float* scores, size_t keep, float first_distance) {
  const double u = 0x1p-24, n = double(p.d) + 3;
  const double gamma = n * u / (1 - n * u);
  const double slack = 8 * gamma + 16 * u;
  const double radius =
      (std::sqrt(double{first_distance} * (1 + 4 * gamma)) + double{pc.lane_norm[ids[0]]}) *
      (1 + 16 * u);
  auto error = [&](uint32_t c) {
    const double reach = radius + pc.lane_norm[c];
    return slack * (reach * reach + (p.bias != nullptr ? std::abs(double{p.bias[c]}) : 0.0));
  };
  const double first_error = error(ids[0]);
  for (size_t r = 1; r < keep; ++r) {
    if (ids[r] == kNone) continue;
    // A NaN or infinite score or error proves nothing.
    if (!(double{scores[r]} - scores[0] > first_error + error(ids[r]))) return false;
  }
  return std::isfinite(first_error);
}

// Re-scores each point's candidates exactly and writes the best m (by exact distance + bias).
// With `pc` and the candidates' expanded-form `scores` (m = 1 only), a point whose first
// candidate FirstIsProven gets that one's exact distance alone: the same label and distance.
void Rerank(const Problem& p, internal::DistanceFn l2, size_t begin, size_t end, size_t keep,
            const uint32_t* ids, const PackedCentroids* pc = nullptr,
            const float* scores = nullptr) {
  struct Candidate {
    float cost;
    uint32_t id;
    float distance;
    bool operator<(const Candidate& o) const {
      return cost < o.cost || (cost == o.cost && id < o.id);
    }
  };
  std::vector<Candidate> cand(keep);
  const bool bounded = pc != nullptr && scores != nullptr && p.m == 1 && keep > 1;
  for (size_t i = begin; i < end; ++i) {
    const float* x = p.points + i * p.d;
    const uint32_t* own = ids + (i - begin) * keep;
    float first = kInf;  // own[0]'s exact distance, once scored
    if (bounded && own[0] != kNone) {
      first = l2(x, p.centroids + size_t{own[0]} * p.d, p.d);
      if (FirstIsProven(p, *pc, own, scores + (i - begin) * keep, keep, first)) {
        p.labels[i] = own[0];
        if (p.distances != nullptr) p.distances[i] = first;
        continue;
      }
    }
    size_t live = 0;
    for (size_t r = 0; r < keep; ++r) {
      const uint32_t c = own[r];
      if (c == kNone) continue;
      const float dist =
          r == 0 && first != kInf ? first : l2(x, p.centroids + size_t{c} * p.d, p.d);
      cand[live++] = {dist + (p.bias != nullptr ? p.bias[c] : 0.0f), c, dist};
    }
    std::sort(cand.begin(), cand.begin() + live);
    for (size_t r = 0; r < p.m; ++r) {
      p.labels[i * p.m + r] = r < live ? cand[r].id : kNone;
      if (p.distances != nullptr) p.distances[i * p.m + r] = r < live ? cand[r].distance : kInf;
    }
  }
}

// Plain scan: exact distances for every (point, centroid) pair of [begin, end).
void ScanRange(const Problem& p, internal::DistanceFn l2, size_t begin, size_t end) {
  const size_t keep = p.m;
  std::vector<float> score(keep);
  std::vector<uint32_t> ids((end - begin) * keep);
  for (size_t i = begin; i < end; ++i) {
    TopList top{score.data(), &ids[(i - begin) * keep], keep};
    std::fill_n(top.score, keep, kInf);
    std::fill_n(top.id, keep, kNone);
    const float* x = p.points + i * p.d;
    for (size_t c = 0; c < p.k; ++c) {
      const float s = l2(x, p.centroids + c * p.d, p.d) + (p.bias != nullptr ? p.bias[c] : 0.0f);
      if (top.Beats(s, static_cast<uint32_t>(c))) top.Insert(s, static_cast<uint32_t>(c));
    }
  }
  Rerank(p, l2, begin, end, keep, ids.data());
}

// One chunk of points [begin, end) against all centroid tiles with the blocked kernel. False,
// with nothing scored, when a point holds NaN or Inf.
bool BlockedChunk(const Problem& p, const PackedCentroids& pc, size_t begin, size_t end,
                  std::vector<float>& qpack, std::vector<float>& score,
                  std::vector<uint32_t>& ids) {
  const size_t count = end - begin, keep = std::min(p.k, p.m + kRerankExtra);
  const size_t blocks = (count + kQueryBlock - 1) / kQueryBlock;
  qpack.resize(blocks * p.d * kQueryBlock);
  bool finite = true;
  for (size_t b = 0; b < blocks; ++b) {
    finite &= internal::PackQueryBlockAvx512(p.points + (begin + b * kQueryBlock) * p.d,
                                             std::min(kQueryBlock, count - b * kQueryBlock), p.d,
                                             pc.shift.data(), &qpack[b * p.d * kQueryBlock]);
  }
  if (!finite) return false;
  score.assign(blocks * kQueryBlock * keep, kInf);
  ids.assign(blocks * kQueryBlock * keep, kNone);
  const size_t tile = std::max<size_t>(1, kTileBytes / (p.d * kPanelWidth * sizeof(float)));
  float thresholds[kQueryBlock];
  float scores[kQueryBlock * kPanelWidth];
  uint64_t masks[kQueryBlock];
  for (size_t t0 = 0; t0 < pc.num_panels; t0 += tile) {
    const size_t t1 = std::min(pc.num_panels, t0 + tile);
    for (size_t b = 0; b < blocks; ++b) {
      const float* qb = &qpack[b * p.d * kQueryBlock];
      for (size_t q = 0; q < kQueryBlock; ++q) {
        const size_t slot = (b * kQueryBlock + q) * keep;
        thresholds[q] = b * kQueryBlock + q < count ? score[slot + keep - 1] : -kInf;
      }
      for (size_t panel = t0; panel < t1; ++panel) {
        const size_t first = panel * kPanelWidth;
        const size_t lanes = std::min(kPanelWidth, p.k - first);
        const uint64_t valid = (uint64_t{1} << lanes) - 1;
        internal::ScoreBlockAvx512(qb, &pc.panels[panel * p.d * kPanelWidth], p.d,
                                   &pc.lane_bias[first], -2.0f, thresholds, scores, masks, lanes);
        for (size_t q = 0; q < kQueryBlock; ++q) {
          // Only the panel's best `keep` can enter the list: with few centroids (a tree node's
          // k-means) most lanes beat the first panel's infinite threshold.
          uint64_t mask =
              internal::BestLanesAvx512(&scores[q * kPanelWidth], masks[q] & valid, keep);
          if (mask == 0) continue;
          const size_t slot = (b * kQueryBlock + q) * keep;
          TopList top{&score[slot], &ids[slot], keep};
          do {
            const int j = __builtin_ctzll(mask);
            mask &= mask - 1;
            const float s = scores[q * kPanelWidth + j];
            const auto c = static_cast<uint32_t>(first + j);
            if (top.Beats(s, c)) top.Insert(s, c);
          } while (mask != 0);
          thresholds[q] = top.score[keep - 1];
        }
      }
    }
  }
  Rerank(p, internal::L2SqrAvx512, begin, end, keep, ids.data(), &pc, score.data());
  return true;
}

class CpuClusteringBackend final : public ClusteringBackend {
 public:
  CpuClusteringBackend(uint32_t threads, internal::KernelLevelId level)
      : threads_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())),
        kernels_(internal::KernelsFor(level)) {}

  std::string name() const override { return std::string("cpu-") + kernels_.name; }

  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    if (k == 0) return absl::InvalidArgumentError("k: need at least one centroid");
    if (k >= kNone) return absl::InvalidArgumentError(absl::StrCat("k: ", k, " >= 2^32 - 1"));
    if (d == 0) return absl::InvalidArgumentError("d: must be positive");
    if (m == 0 || m > k) {
      return absl::InvalidArgumentError(absl::StrCat("m: ", m, " not in [1, k = ", k, "]"));
    }
    if (n == 0) return absl::OkStatus();
    if (points == nullptr || centroids == nullptr || labels == nullptr) {
      return absl::InvalidArgumentError("points, centroids and labels must not be null");
    }
    SHOAL_RETURN_IF_ERROR(CheckFiniteRows(centroids, k, d, "centroids"));
    if (bias != nullptr) SHOAL_RETURN_IF_ERROR(CheckFiniteRows(bias, k, 1, "bias"));
    const Problem p{points, n, centroids, k, d, m, bias, labels, distances};
    const size_t threads = std::clamp<size_t>(n / kMinPointsPerThread, 1, threads_);
    if (kernels_.level != KernelLevelId::kAvx512) {
      SHOAL_RETURN_IF_ERROR(CheckFiniteRows(points, n, d, "points"));
      base::RunOnThreads(threads, [&](size_t t) {
        ScanRange(p, kernels_.l2_sqr, n * t / threads, n * (t + 1) / threads);
      });
      return absl::OkStatus();
    }
    // The points are checked as they are packed (one pass over them, not two); the plain check
    // names the first bad row only when a chunk found one.
    const PackedCentroids pc = PackCentroids(p);
    std::atomic<bool> finite{true};
    base::RunOnThreads(threads, [&](size_t t) {
      std::vector<float> qpack, score;
      std::vector<uint32_t> ids;
      const size_t end = n * (t + 1) / threads;
      for (size_t b = n * t / threads; b < end && finite; b += kChunkPoints) {
        if (!BlockedChunk(p, pc, b, std::min(end, b + kChunkPoints), qpack, score, ids)) {
          finite = false;
        }
      }
    });
    return finite ? absl::OkStatus() : CheckFiniteRows(points, n, d, "points");
  }

 private:
  const size_t threads_;
  const internal::DistanceKernels& kernels_;
};

// Assignment and update on the CUDA device (index/clustering/gpu), with calls too small to pay for
// the transfers and launches (and m > gpu::kGpuMaxTopM) on the CPU backend. The split depends only
// on the call's shape, so results stay deterministic.
class GpuClusteringBackend final : public ClusteringBackend {
 public:
  explicit GpuClusteringBackend(uint32_t threads)
      : cpu_(MakeCpuClusteringBackend(threads)),
        threads_(threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {}
  std::string name() const override { return "cuda"; }

  absl::Status AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                          size_t m, const float* bias, uint32_t* labels,
                          float* distances) override {
    if (!AssignsOnDevice(n, k, d, m)) {
      return cpu_->AssignTopM(points, n, centroids, k, d, m, bias, labels, distances);
    }
    return gpu::GpuAssignTopM(points, n, centroids, k, d, m, bias, labels, distances);
  }

  bool AssignsOnDevice(size_t n, size_t k, size_t d, size_t m) const override {
    return m <= gpu::kGpuMaxTopM && k >= kMinGpuCentroidsPerThread * threads_ &&
           double(n) * k * d >= kMinGpuAssignWorkPerThread * threads_;
  }

  // On the device only where the assignment of this shape is (k-means then keeps the points
  // there): an update reads each point once, which the CPU does faster than the copy.
  absl::Status UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels,
                               size_t k, float* centroids, uint32_t* sizes) override {
    if (double(n) * d < kMinGpuUpdateWork || !AssignsOnDevice(n, k, d, 1)) {
      return cpu_->UpdateCentroids(points, n, d, labels, k, centroids, sizes);
    }
    return gpu::GpuUpdateCentroids(points, n, d, labels, k, centroids, sizes);
  }

  std::shared_ptr<const void> RetainPoints(const float* points, size_t n, size_t d) override {
    if (double(n) * d < kMinGpuUpdateWork) return nullptr;
    return gpu::GpuRetainPoints(points, n, d);
  }

 private:
  // Multiply-adds per CPU thread below which an assignment stays on the CPU: a device call costs
  // about 2 ms of set-up (buffers, copies, synchronisation), in which one AVX-512 thread does
  // about 2^25 of them.
  static constexpr double kMinGpuAssignWorkPerThread = 1 << 25;
  // Centroids per CPU thread below which an assignment stays on the CPU whatever n: each point
  // then costs the CPU fewer multiply-adds than its copy to the device takes (an AVX-512 thread
  // does ~35 G/s, the copy moves ~8 GB/s). Keeps a centroid tree's many small k-means (k at most
  // the branching factor) off the device.
  static constexpr size_t kMinGpuCentroidsPerThread = 8;
  static constexpr double kMinGpuUpdateWork = 1 << 20;

  std::unique_ptr<ClusteringBackend> cpu_;
  const size_t threads_;
};

}  // namespace

std::unique_ptr<ClusteringBackend> MakeCpuClusteringBackend(uint32_t threads) {
  return std::make_unique<CpuClusteringBackend>(threads, internal::ActiveKernels().level);
}

std::unique_ptr<ClusteringBackend> MakeDefaultClusteringBackend(uint32_t threads) {
  if (gpu::GpuAvailable()) return MakeGpuClusteringBackend(threads);
  return MakeCpuClusteringBackend(threads);
}

std::unique_ptr<ClusteringBackend> MakeGpuClusteringBackend(uint32_t threads) {
  return std::make_unique<GpuClusteringBackend>(threads);
}

}  // namespace shoal::index
