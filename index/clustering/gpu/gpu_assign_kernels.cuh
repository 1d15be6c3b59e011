// Private to index/clustering/gpu: the assignment kernels (see gpu_kmeans.h for the method).
//
//   ShiftKernel      points minus the centroids' mean, rounded to TF32, and their squared norms
//                    (one warp per row, coalesced).
//   ScanKernel       over a column-major block of cuBLAS TF32 dot products (4 or 16 threads per
//                    point, each over a slice of the centroids): the m-th best approximate
//                    score, then every centroid within twice the error bound of it.
//   Tf32TopMKernel   the same without cuBLAS: 128 points x 64 centroids per tile on tensor cores
//                    (WMMA m16n16k8 TF32), the top list fed from shared memory.
//   RefineKernel     re-scores in exact fp32 each point's candidates that may still be in
//                    its exact top m (within twice the error bound of the m-th score), or
//                    flags the point when such a rival may lie beyond the kept list.
//   ExactTopMKernel  exact fp32 top-TOPM over all centroids on CUDA cores, for every point
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
  const float* shifted;    // k x d, centroids minus shift rounded to TF32 (TF32 path)
  const float* shift;      // d, the centroids' mean
  const float* lane_bias;  // k: |c - shift|^2 + bias[c] (TF32 path)
  const float* bias;       // k or null
  uint32_t k, d, m;
  uint32_t keep;         // candidates kept per point for RefineKernel (kKeep for Tf32TopMKernel)
  float cmax;            // max |c - shift|
  Tf32ErrorBound bound;  // of a TF32 score against the exact fp32 cost (gpu_error_bound.h)
};

// Candidates Tf32TopMKernel keeps per point for RefineKernel to re-score (ScanKernel keeps
// AssignArgs::keep): rivals within the error bound of the m-th best are re-scored from this list
// instead of sending the point to a full exact scan over all k.
constexpr int kKeep = 32;

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
template <int TOPM>
__device__ __forceinline__ void WriteTop(const TopList<TOPM>& top, const float* __restrict__ x,
                                         const AssignArgs& a, uint32_t row,
                                         uint32_t* __restrict__ labels,
                                         float* __restrict__ distances) {
#pragma unroll
  for (int r = 0; r < TOPM; ++r) {
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
template <int TOPM>
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
  // loop (an unrolled one would instantiate Offer kExactTileC times per TOPM).
  __shared__ float tile_dist[kExactTileC][kExactThreads];
  const int t = threadIdx.x;
  const bool valid = first + t < count;
  const uint32_t row = valid ? (rows != nullptr ? rows[first + t] : first + t) : 0;
  TopList<TOPM> top;
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

// Approximate top-kKeep per point on tensor cores; writes cand_score/cand_id (count x kKeep,
// ascending). Requires sm_80 (TF32 WMMA); on older devices the host never launches it.
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
  TopList<kKeep> top;
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
  uint32_t* const merge_id = reinterpret_cast<uint32_t*>(smem + kTcPoints * kKeep);
  if (half == 1) {
#pragma unroll
    for (int j = 0; j < kKeep; ++j) {
      merge_score[point * kKeep + j] = top.score[j];
      merge_id[point * kKeep + j] = top.id[j];
    }
  }
  __syncthreads();
  if (half == 0 && first + point < count) {
    for (int j = 0; j < kKeep; ++j)
      top.Offer(merge_score[point * kKeep + j], merge_id[point * kKeep + j]);
    const size_t out = size_t{first + point} * kKeep;
#pragma unroll
    for (int j = 0; j < kKeep; ++j) {
      cand_score[out + j] = top.score[j];
      cand_id[out + j] = top.id[j];
    }
  }
#endif
}
static_assert(kTcPoints * kKeep * 2 <= kTcSmemFloats, "merge area");
static_assert((kTcPoints + kTcCentroids) * kTcStageLd <= kTcSmemFloats, "stage area");

// Points minus shift rounded to TF32 (the GEMM's operand) and |x - shift|^2 (for the error
// bound; any summation order: the bound's safety factor covers it). One warp per row.
__global__ void ShiftKernel(const float* __restrict__ points, uint32_t count, uint32_t d,
                            const float* __restrict__ shift, float* __restrict__ shifted,
                            float* __restrict__ norms) {
  const int lane = threadIdx.x % 32;
  const uint32_t warps = gridDim.x * (blockDim.x / 32);
  for (uint32_t row = (blockIdx.x * blockDim.x + threadIdx.x) / 32; row < count; row += warps) {
    float norm = 0.0f;
    for (uint32_t j = lane; j < d; j += 32) {
      const float v = points[size_t{row} * d + j] - shift[j];
      norm = fmaf(v, v, norm);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      shifted[size_t{row} * d + j] = nvcuda::wmma::__float_to_tf32(v);
#else
      shifted[size_t{row} * d + j] = v;  // never read: TF32 needs sm_80
#endif
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) norm += __shfl_xor_sync(0xffffffffu, norm, o);
    if (lane == 0) norms[row] = norm;
  }
}

// A ScanKernel block: POINTS consecutive points (threadIdx.x, coalesced reads) times
// kScanThreads / POINTS slices of the centroids (threadIdx.y). 128 points suit long chunks; a
// chunk too short to give every multiprocessor several such blocks (large k: the chunk holds
// at most 2^28 dots) is scanned 32 points x 16 slices per block instead.
constexpr int kScanThreads = 512;
constexpr uint32_t kScanWideRows = 128 * 512;  // rows from which 128-point blocks fill the device

// The m-th of a sorted list (m - 1 < N), by constant indices so the list stays in registers.
template <int N>
__device__ __forceinline__ float MthScore(const TopList<N>& top, uint32_t m) {
  float s = top.score[0];
#pragma unroll
  for (int j = 1; j < N; ++j) s = j == static_cast<int>(m) - 1 ? top.score[j] : s;
  return s;
}

// Candidates per point over dots (count x k, column-major: the dots of point p are
// dots[p + c * count]) with score(c) = |c'|^2 + bias - 2 dot: with thr = (m-th best score) +
// 2 * bound (see RefineKernel), every centroid scoring at or below thr, in any order. Writes
// cand_count (the number found, which may exceed a.keep) and up to a.keep (score, id) pairs per
// point. TOPM >= m.
// m = 1 reads the block once: each slice keeps the centroids within twice the bound of its
// running best (kScanHeld per thread, dropping those the best has since moved away from); the
// final thr is at most any running one, so every centroid at or below it was kept. A slice
// that runs out of room (many near-ties, or a slice far from the point), and every slice when
// m > 1, reads its centroids a second time against thr.
constexpr int kScanHeld = 8;
constexpr int kScanBatch = 8;  // scores loaded before the first is ranked

// The approximate score of centroid c for the column's point; past `end` (c < end + kScanBatch),
// that of end - 1, so that a batch's loads need no branch.
__device__ __forceinline__ float ScoreAt(const float* __restrict__ column, uint32_t count,
                                         const AssignArgs& a, uint32_t c, uint32_t end) {
  c = c < end ? c : end - 1;
  return fmaf(-2.0f, column[size_t{c} * count], a.lane_bias[c]);
}

// fn(score, c) for each c in [begin, end), in increasing c, with kScanBatch scores loaded
// before the first of them is handed over.
template <typename Fn>
__device__ __forceinline__ void ForEachScoreBatched(const float* __restrict__ column,
                                                    uint32_t count, const AssignArgs& a,
                                                    uint32_t begin, uint32_t end, Fn& fn) {
  for (uint32_t c0 = begin; c0 < end; c0 += kScanBatch) {
    float batch[kScanBatch];
#pragma unroll
    for (int b = 0; b < kScanBatch; ++b) batch[b] = ScoreAt(column, count, a, c0 + b, end);
#pragma unroll
    for (int b = 0; b < kScanBatch; ++b) {
      if (c0 + b < end) fn(batch[b], c0 + b);
    }
  }
}

template <int TOPM, int POINTS>
__global__ void __launch_bounds__(kScanThreads)
    ScanKernel(const float* __restrict__ dots, uint32_t count, AssignArgs a,
               const float* __restrict__ norms, float* __restrict__ cand_score,
               uint32_t* __restrict__ cand_id, uint32_t* __restrict__ cand_count) {
  constexpr int kSlices = kScanThreads / POINTS;
  constexpr bool kOnce = TOPM == 1;
  __shared__ float merge_score[POINTS * TOPM];
  __shared__ uint32_t merge_id[POINTS * TOPM];
  __shared__ float threshold[POINTS];
  __shared__ uint32_t listed[POINTS];
  __shared__ float held_score[kOnce ? kScanHeld : 1][kScanThreads];  // column per thread
  __shared__ uint32_t held_id[kOnce ? kScanHeld : 1][kScanThreads];
  const uint32_t point = blockIdx.x * POINTS + threadIdx.x;
  const bool valid = point < count;
  const int slice = threadIdx.y;
  const int self = slice * POINTS + threadIdx.x;
  const uint32_t per_slice = (a.k + kSlices - 1) / kSlices;
  const uint32_t begin = slice * per_slice;
  const uint32_t end = begin + per_slice < a.k ? begin + per_slice : a.k;
  const float* column = dots + point;
  // NaN for NaN points: nothing is listed and the refinement flags the row.
  const float twice_bound = valid ? 2.0f * a.bound.ForPoint(sqrtf(norms[point]), a.cmax) : 0.0f;
  TopList<TOPM> top;
  top.Init();
  int held = 0;
  bool overflow = false;
  // m = 1 reads kScanBatch scores before ranking any (in increasing c, as one at a time would),
  // so that each thread has that many loads in flight: one at a time left the scan waiting on
  // memory rather than bandwidth-bound.
  const auto scan = [&](float score, uint32_t c) {
    top.Offer(score, c);
    if constexpr (kOnce) {
      const float running = top.score[0] + twice_bound;
      if (overflow || !(score <= running)) return;
      if (held == kScanHeld) {  // full: drop what the running best has left behind
        int kept = 0;
        for (int h = 0; h < kScanHeld; ++h) {
          if (held_score[h][self] <= running) {
            held_score[kept][self] = held_score[h][self];
            held_id[kept][self] = held_id[h][self];
            ++kept;
          }
        }
        held = kept;
      }
      if (held < kScanHeld) {
        held_score[held][self] = score;
        held_id[held][self] = c;
        ++held;
      } else {
        overflow = true;
      }
    }
  };
  if (valid) {
    if constexpr (kOnce) {
      ForEachScoreBatched(column, count, a, begin, end, scan);
    } else {  // a longer list unrolled takes more registers (m <= 4) or spills
#pragma unroll(TOPM <= 4 ? 4 : 1)
      for (uint32_t c = begin; c < end; ++c) scan(ScoreAt(column, count, a, c, end), c);
    }
  }
  for (int s = 1; s < kSlices; ++s) {  // slice 0 merges the others' lists one by one
    __syncthreads();
    if (slice == s) {
#pragma unroll
      for (int j = 0; j < TOPM; ++j) {
        merge_score[threadIdx.x * TOPM + j] = top.score[j];
        merge_id[threadIdx.x * TOPM + j] = top.id[j];
      }
    }
    __syncthreads();
    if (slice == 0) {
      for (int j = 0; j < TOPM; ++j) {
        top.Offer(merge_score[threadIdx.x * TOPM + j], merge_id[threadIdx.x * TOPM + j]);
      }
    }
  }
  if (slice == 0) {
    threshold[threadIdx.x] = valid ? MthScore(top, a.m) + twice_bound : 0.0f;
    listed[threadIdx.x] = 0;
  }
  __syncthreads();
  const float thr = threshold[threadIdx.x];
  const size_t out = size_t{point} * a.keep;
  const auto list = [&](float score, uint32_t c) {
    if (score <= thr) {
      const uint32_t i = atomicAdd(&listed[threadIdx.x], 1u);
      if (i < a.keep) {
        cand_score[out + i] = score;
        cand_id[out + i] = c;
      }
    }
  };
  if (kOnce && valid && !overflow) {
    for (int h = 0; h < held; ++h) list(held_score[h][self], held_id[h][self]);
  } else if (valid) {  // a second pass: m > 1, or a slice that ran out of room
    ForEachScoreBatched(column, count, a, begin, end, list);
  }
  __syncthreads();
  if (slice == 0 && valid) cand_count[point] = listed[threadIdx.x];
}

constexpr int kRefineThreads = 128;

// Per-warp staging of WarpExactL2: 32 rows x 32 dimensions of points and of centroids.
struct RefineTiles {
  float x[32][33];  // +1: no bank conflicts
  float c[32][33];
  uint32_t row[32], centroid[32];
};

// ExactL2 of each lane's (row, centroid) pair, kNoLabel for none (result 0): the same j order
// and arithmetic as ExactL2, with the rows read coalesced through shared memory 32 dimensions at
// a time. Every lane of the warp must call it.
__device__ __forceinline__ float WarpExactL2(const float* __restrict__ points,
                                             const float* __restrict__ centroids, uint32_t d,
                                             uint32_t row, uint32_t centroid, RefineTiles& t) {
  const int lane = threadIdx.x % 32;
  t.row[lane] = row;
  t.centroid[lane] = centroid;
  float acc = 0.0f;
  for (uint32_t d0 = 0; d0 < d; d0 += 32) {
    __syncwarp();
    const uint32_t j = d0 + lane;
#pragma unroll 8  // several rows' loads in flight at once
    for (int q = 0; q < 32; ++q) {
      const uint32_t r = t.row[q], c = t.centroid[q];
      t.x[q][lane] = r != kNoLabel && j < d ? points[size_t{r} * d + j] : 0.0f;
      t.c[q][lane] = c != kNoLabel && j < d ? centroids[size_t{c} * d + j] : 0.0f;
    }
    __syncwarp();
    const uint32_t dims = d - d0 < 32 ? d - d0 : 32;
    for (uint32_t i = 0; i < dims; ++i) {  // padding is skipped: sums stay in exact j order
      const float diff = t.x[lane][i] - t.c[lane][i];
      acc = fmaf(diff, diff, acc);
    }
  }
  __syncwarp();
  return acc;
}

// One thread per point. With thr = (m-th approximate score) + 2 * bound, a centroid scoring
// above thr cannot be among the exact top m (its exact cost exceeds that of each of the m
// best candidates). So re-scoring in exact fp32 every centroid at or below thr and taking the
// best m gives the exact fp32 answer, when the list holds them all; otherwise the point is
// flagged for a full exact scan. The candidates come from ScanKernel (cand_count: every one is
// within thr, the list is complete when cand_count <= a.keep) or, with cand_count null, from
// Tf32TopMKernel (the kKeep best, ascending: complete when the last scores above thr). The
// re-scored candidates feed a list of TOPM (>= m): only the best m are written.
template <int TOPM>
__global__ void __launch_bounds__(kRefineThreads)
    RefineKernel(const float* __restrict__ points, uint32_t count, AssignArgs a,
                 const float* __restrict__ norms, const float* __restrict__ cand_score,
                 const uint32_t* __restrict__ cand_id, const uint32_t* __restrict__ cand_count,
                 uint32_t* __restrict__ labels, float* __restrict__ distances,
                 uint32_t* __restrict__ flagged, uint32_t* __restrict__ flagged_count) {
  __shared__ RefineTiles tiles[kRefineThreads / 32];
  RefineTiles& t = tiles[threadIdx.x / 32];
  const uint32_t row = blockIdx.x * kRefineThreads + threadIdx.x;
  const float* s = cand_score + size_t{row} * a.keep;
  const uint32_t* ids = cand_id + size_t{row} * a.keep;
  bool active = row < count;  // lanes past the end or flagged still join the warp's loads
  float thr = __int_as_float(0x7f800000);
  uint32_t listed = a.keep;
  if (active) {
    bool complete;
    if (cand_count != nullptr) {
      listed = cand_count[row];
      complete = listed >= a.m && listed <= a.keep;  // fewer than m: a NaN point
    } else {
      thr = s[a.m - 1] + 2.0f * a.bound.ForPoint(sqrtf(norms[row]), a.cmax);
      // s[keep-1] is +inf when k < keep: the list then holds every centroid. NaN points
      // (reported as errors by the caller) have a NaN threshold.
      complete = ids[a.m - 1] != kNoLabel && s[a.keep - 1] > thr;
    }
    if (!complete) {
      flagged[atomicAdd(flagged_count, 1u)] = row;  // order irrelevant: rows are independent
      active = false;
    }
  }
  TopList<TOPM> top;
  top.Init();
#pragma unroll 1
  for (uint32_t r = 0; r < a.keep; ++r) {
    const bool take = active && r < listed && s[r] <= thr;
    if (!__any_sync(0xffffffffu, take)) break;
    const uint32_t c = take ? ids[r] : kNoLabel;
    const float l2 = WarpExactL2(points, a.centroids, a.d, take ? row : kNoLabel, c, t);
    if (take) top.Offer(l2 + (a.bias != nullptr ? a.bias[c] : 0.0f), c);
  }
  // Distances without the bias: the score itself when there is none, else computed again.
#pragma unroll 1
  for (uint32_t r = 0; r < a.m; ++r) {
    float distance = 0.0f;
    uint32_t c = kNoLabel;
    if (active) {
#pragma unroll
      for (int j = 0; j < TOPM; ++j) {  // constant indices keep the list in registers
        if (j == static_cast<int>(r)) {
          c = top.id[j];
          distance = top.score[j];
        }
      }
    }
    if (a.bias != nullptr)
      distance = WarpExactL2(points, a.centroids, a.d, c == kNoLabel ? kNoLabel : row, c, t);
    if (active) {
      labels[size_t{row} * a.m + r] = c;
      distances[size_t{row} * a.m + r] = c == kNoLabel ? __int_as_float(0x7f800000) : distance;
    }
  }
}

}  // namespace shoal::index::gpu::backend

#endif  // SHOAL_INDEX_CLUSTERING_GPU_GPU_ASSIGN_KERNELS_CUH_
