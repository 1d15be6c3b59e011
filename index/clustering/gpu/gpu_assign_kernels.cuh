// Private to index/clustering/gpu: the assignment kernels (see gpu_kmeans.h for the method).
//
//   Tf32TopMKernel   128 points x 64 centroids per tile on tensor cores (WMMA m16n16k8 TF32),
//                    running top-KEEP of approximate scores per point in registers.
//   RefineKernel     re-scores in exact fp32 each point's candidates that may still be in
//                    its exact top m (within twice the error bound of the m-th score), or
//                    flags the point when such a rival may lie beyond the kept list.
//   ExactTopMKernel  exact fp32 top-KEEP over all centroids on CUDA cores, for every point
//                    (the fp32 path) or for the flagged rows only (the recheck).
// Exact fp32 distances are sum_j fmaf(x_j - c_j, x_j - c_j, acc) in increasing j in every
// kernel, so a point gets bitwise the same result whichever kernel finishes it.
#ifndef SHOAL_INDEX_CLUSTERING_GPU_GPU_ASSIGN_KERNELS_CUH_
#define SHOAL_INDEX_CLUSTERING_GPU_GPU_ASSIGN_KERNELS_CUH_

#include <cuda_runtime.h>
#include <mma.h>

#include "index/clustering/gpu/gpu_device.cuh"
#include "index/clustering/gpu/gpu_error_bound.h"

namespace shoal::index::gpu::backend {

// Problem constants shared by the kernels of one assignment call.
struct AssignArgs {
  const float* centroids;  // k x d, original coordinates
  const float* shifted;    // k x d, centroids minus shift (TF32 path)
  const float* shift;      // d, the centroids' mean
  const float* lane_bias;  // k: |c - shift|^2 + bias[c] (TF32 path)
  const float* bias;       // k or null
  uint32_t k, d, m;
  float cmax;            // max |c - shift|
  Tf32ErrorBound bound;  // of a TF32 score against the exact fp32 cost (gpu_error_bound.h)
};

constexpr int kExactThreads = 128;  // points per block of ExactTopMKernel
constexpr int kExactTileC = 32;
constexpr int kExactTileD = 32;

__device__ __forceinline__ float ExactL2(const float* __restrict__ x, const float* __restrict__ c,
                                         uint32_t d) {
  float acc = 0.0f;
  for (uint32_t j = 0; j < d; ++j) {
    const float diff = x[j] - c[j];
    acc = fmaf(diff, diff, acc);
  }
  return acc;
}

// Writes the first m of `top` (ranked by exact cost) with exact distances.
template <int KEEP>
__device__ __forceinline__ void WriteTop(const TopList<KEEP>& top, const float* __restrict__ x,
                                         const AssignArgs& a, uint32_t row,
                                         uint32_t* __restrict__ labels,
                                         float* __restrict__ distances) {
#pragma unroll
  for (int r = 0; r < KEEP; ++r) {
    if (r < static_cast<int>(a.m)) {
      const uint32_t c = top.id[r];
      labels[size_t{row} * a.m + r] = c;
      distances[size_t{row} * a.m + r] = c == kNoLabel
                                             ? __int_as_float(0x7f800000)
                                             : ExactL2(x, a.centroids + size_t{c} * a.d, a.d);
    }
  }
}

// One thread per point; rows == null: the chunk's points 0..count-1, else rows[0..*count).
template <int KEEP>
__global__ void __launch_bounds__(kExactThreads)
    ExactTopMKernel(const float* __restrict__ points, uint32_t count, const uint32_t* rows,
                    const uint32_t* count_on_device, AssignArgs a, uint32_t* __restrict__ labels,
                    float* __restrict__ distances) {
  if (count_on_device != nullptr) count = *count_on_device;
  const uint32_t first = blockIdx.x * kExactThreads;
  if (first >= count) return;  // the whole block: no __syncthreads is skipped by part of it
  __shared__ float point_tile[kExactThreads][kExactTileD + 1];  // +1: no bank conflicts
  __shared__ float centroid_tile[kExactTileC][kExactTileD];
  // A tile's finished distances, column per thread: the top list is then fed by one rolled
  // loop (an unrolled one would instantiate Offer kExactTileC times per KEEP).
  __shared__ float tile_dist[kExactTileC][kExactThreads];
  const int t = threadIdx.x;
  const bool valid = first + t < count;
  const uint32_t row = valid ? (rows != nullptr ? rows[first + t] : first + t) : 0;
  TopList<KEEP> top;
  top.Init();
  for (uint32_t c0 = 0; c0 < a.k; c0 += kExactTileC) {
    float acc[kExactTileC];
#pragma unroll
    for (int c = 0; c < kExactTileC; ++c) acc[c] = 0.0f;
    for (uint32_t d0 = 0; d0 < a.d; d0 += kExactTileD) {
      __syncthreads();
      for (int i = t; i < kExactThreads * kExactTileD; i += kExactThreads) {
        const int p = i / kExactTileD, j = i % kExactTileD;
        float v = 0.0f;
        if (first + p < count && d0 + j < a.d) {
          const uint32_t r = rows != nullptr ? rows[first + p] : first + p;
          v = points[size_t{r} * a.d + d0 + j];
        }
        point_tile[p][j] = v;
      }
      for (int i = t; i < kExactTileC * kExactTileD; i += kExactThreads) {
        const uint32_t c = c0 + i / kExactTileD, j = d0 + i % kExactTileD;
        centroid_tile[i / kExactTileD][i % kExactTileD] =
            c < a.k && j < a.d ? a.centroids[size_t{c} * a.d + j] : 0.0f;
      }
      __syncthreads();
      const uint32_t dims = a.d - d0 < kExactTileD ? a.d - d0 : kExactTileD;
      for (uint32_t j = 0; j < dims; ++j) {  // padding is skipped: sums stay in exact j order
        const float x = point_tile[t][j];
#pragma unroll
        for (int c = 0; c < kExactTileC; ++c) {
          const float diff = x - centroid_tile[c][j];
          acc[c] = fmaf(diff, diff, acc[c]);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < kExactTileC; ++c) tile_dist[c][t] = acc[c];  // own column: no sync
#pragma unroll 1
    for (int c = 0; c < kExactTileC; ++c) {
      const uint32_t id = c0 + c;
      if (id < a.k) top.Offer(tile_dist[c][t] + (a.bias != nullptr ? a.bias[id] : 0.0f), id);
    }
  }
  if (valid) WriteTop(top, points + size_t{row} * a.d, a, row, labels, distances);
}

constexpr int kTcPoints = 128;             // points per block
constexpr int kTcCentroids = 64;           // centroids per tile
constexpr int kTcDims = 32;                // dimensions per stage (4 WMMA k-steps)
constexpr int kTcThreads = 256;            // 8 warps: 4 (points) x 2 (centroids), 32 x 32 each
constexpr int kTcStageLd = kTcDims + 4;    // WMMA wants ldm % 4 == 0; +4 spreads banks
constexpr int kTcScoreLd = kTcPoints + 4;  // scores are stored centroid-major
constexpr int kTcSmemFloats = kTcCentroids * kTcScoreLd;  // >= stage and >= merge area

// Approximate top-KEEP per point on tensor cores; writes cand_score/cand_id (count x KEEP,
// ascending). Requires sm_80 (TF32 WMMA); on older devices the host never launches it.
template <int KEEP>
__global__ void __launch_bounds__(kTcThreads)
    Tf32TopMKernel(const float* __restrict__ points, uint32_t count, AssignArgs a,
                   float* __restrict__ cand_score, uint32_t* __restrict__ cand_id) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  __shared__ __align__(32) float smem[kTcSmemFloats];
  float* const xs = smem;                           // [kTcPoints][kTcStageLd]
  float* const cs = smem + kTcPoints * kTcStageLd;  // [kTcCentroids][kTcStageLd]
  float* const scores = smem;                       // [kTcCentroids][kTcScoreLd]
  const uint32_t first = blockIdx.x * kTcPoints;
  const int t = threadIdx.x, warp = t / 32;
  const int wr = warp / 2, wc = warp % 2;
  const int point = t % kTcPoints, half = t / kTcPoints;  // epilogue: 2 threads per point
  TopList<KEEP> top;
  top.Init();
  for (uint32_t c0 = 0; c0 < a.k; c0 += kTcCentroids) {
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    }
    for (uint32_t d0 = 0; d0 < a.d; d0 += kTcDims) {
      __syncthreads();  // the previous stage (or the previous tile's scores) is consumed
      for (int i = t; i < kTcPoints * kTcDims; i += kTcThreads) {
        const int p = i / kTcDims, j = i % kTcDims;
        const uint32_t dim = d0 + j;
        const float v = first + p < count && dim < a.d
                            ? points[size_t{first + p} * a.d + dim] - a.shift[dim]
                            : 0.0f;
        xs[p * kTcStageLd + j] = wmma::__float_to_tf32(v);
      }
      for (int i = t; i < kTcCentroids * kTcDims; i += kTcThreads) {
        const int c = i / kTcDims, j = i % kTcDims;
        const uint32_t id = c0 + c, dim = d0 + j;
        const float v = id < a.k && dim < a.d ? a.shifted[size_t{id} * a.d + dim] : 0.0f;
        cs[c * kTcStageLd + j] = wmma::__float_to_tf32(v);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTcDims; kk += 8) {
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          wmma::load_matrix_sync(fa[i], xs + (wr * 32 + i * 16) * kTcStageLd + kk, kTcStageLd);
          wmma::load_matrix_sync(fb[i], cs + (wc * 32 + i * 16) * kTcStageLd + kk, kTcStageLd);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
#pragma unroll
          for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
      }
    }
    __syncthreads();  // every warp is done with the stage before scores overwrite it
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        // Centroid-major (dot of point p with centroid c at scores[c][p]): the epilogue's
        // threads then read consecutive addresses.
        wmma::store_matrix_sync(scores + (wc * 32 + j * 16) * kTcScoreLd + wr * 32 + i * 16,
                                acc[i][j], kTcScoreLd, wmma::mem_col_major);
      }
    }
    __syncthreads();
    if (first + point < count) {
#pragma unroll 1
      for (int j = 0; j < kTcCentroids / 2; ++j) {
        const int c = half * (kTcCentroids / 2) + j;
        const uint32_t id = c0 + c;
        if (id < a.k) top.Offer(fmaf(-2.0f, scores[c * kTcScoreLd + point], a.lane_bias[id]), id);
      }
    }
  }
  // Merge the two halves' lists through shared memory.
  __syncthreads();
  float* const merge_score = smem;
  uint32_t* const merge_id = reinterpret_cast<uint32_t*>(smem + kTcPoints * KEEP);
  if (half == 1) {
#pragma unroll
    for (int j = 0; j < KEEP; ++j) {
      merge_score[point * KEEP + j] = top.score[j];
      merge_id[point * KEEP + j] = top.id[j];
    }
  }
  __syncthreads();
  if (half == 0 && first + point < count) {
    for (int j = 0; j < KEEP; ++j)
      top.Offer(merge_score[point * KEEP + j], merge_id[point * KEEP + j]);
    const size_t out = size_t{first + point} * KEEP;
#pragma unroll
    for (int j = 0; j < KEEP; ++j) {
      cand_score[out + j] = top.score[j];
      cand_id[out + j] = top.id[j];
    }
  }
#endif
}
static_assert(kTcPoints * 32 * 2 <= kTcSmemFloats, "merge area for KEEP = 32");
static_assert((kTcPoints + kTcCentroids) * kTcStageLd <= kTcSmemFloats, "stage area");

// One thread per point. With thr = (m-th approximate score) + 2 * bound, a centroid scoring
// above thr cannot be among the exact top m (its exact cost exceeds that of each of the m
// best candidates). So when the kept list ends above thr (every rival outside it scores
// higher still), re-scoring the kept candidates at or below thr in exact fp32 and taking the
// best m gives the exact fp32 answer; otherwise the point is flagged for a full exact scan.
template <int KEEP>
__global__ void RefineKernel(const float* __restrict__ points, uint32_t count, AssignArgs a,
                             const float* __restrict__ cand_score,
                             const uint32_t* __restrict__ cand_id, uint32_t* __restrict__ labels,
                             float* __restrict__ distances, uint32_t* __restrict__ flagged,
                             uint32_t* __restrict__ flagged_count) {
  const uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= count) return;
  const float* x = points + size_t{row} * a.d;
  float norm = 0.0f;  // |x - shift|^2
  for (uint32_t j = 0; j < a.d; ++j) {
    const float v = x[j] - a.shift[j];
    norm = fmaf(v, v, norm);
  }
  const float* s = cand_score + size_t{row} * KEEP;
  const uint32_t* ids = cand_id + size_t{row} * KEEP;
  const float thr = s[a.m - 1] + 2.0f * a.bound.ForPoint(sqrtf(norm), a.cmax);
  // s[KEEP-1] is +inf when k < KEEP: the list then holds every centroid. NaN points (reported
  // as errors by the caller) have no candidates; the exact kernel copes with them.
  if (ids[a.m - 1] == kNoLabel || !(s[KEEP - 1] > thr)) {
    flagged[atomicAdd(flagged_count, 1u)] = row;  // order irrelevant: rows are independent
    return;
  }
  TopList<KEEP> top;
  top.Init();
#pragma unroll 1
  for (int r = 0; r < KEEP; ++r) {
    if (!(s[r] <= thr)) break;  // ascending: the rest score higher
    const uint32_t c = ids[r];
    top.Offer(
        ExactL2(x, a.centroids + size_t{c} * a.d, a.d) + (a.bias != nullptr ? a.bias[c] : 0.0f), c);
  }
  WriteTop(top, x, a, row, labels, distances);
}

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_ASSIGN_KERNELS_CUH_
