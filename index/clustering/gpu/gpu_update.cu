// UpdateCentroids on the device without float atomics, so the result is bitwise repeatable:
// per chunk of points, (1) a histogram of the labels (integer atomics: order-free), (2) a
// stable radix sort of (label, row) pairs, which lays every cluster's rows out as one CSR
// segment in increasing row order, (3) one block per slice of at most kSliceRows rows of a
// segment sums its rows per dimension in double, in row order, (4) each cluster adds its
// slices, in order, to its running double sums. After the last chunk, sum / count.
// The slice table is built on the host from the counts (a few KiB per chunk).
#include <algorithm>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <vector>

#include "index/clustering/gpu/gpu_device.cuh"

namespace shoal::index::gpu::backend {
namespace {

constexpr uint32_t kSliceRows = 2048;
constexpr int kReduceThreads = 128;

__global__ void HistogramKernel(const uint32_t* __restrict__ labels, uint32_t count, uint32_t k,
                                uint64_t first_row, uint32_t* __restrict__ counts,
                                unsigned long long* bad, uint32_t* __restrict__ rows) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  rows[i] = i;
  const uint32_t label = labels[i];
  if (label >= k) {
    atomicMin(bad, static_cast<unsigned long long>(first_row + i));
    return;
  }
  atomicAdd(&counts[label], 1u);
}

struct Slice {
  uint32_t begin, end;  // positions in the sorted rows
};

// Block s sums rows sorted[begin..end) of its slice, dimension by dimension, in row order.
__global__ void SliceSumKernel(const float* __restrict__ points, uint32_t d,
                               const uint32_t* __restrict__ sorted,
                               const Slice* __restrict__ slices, double* __restrict__ partial) {
  const Slice s = slices[blockIdx.x];
  for (uint32_t j = threadIdx.x; j < d; j += blockDim.x) {
    double sum = 0;
    for (uint32_t i = s.begin; i < s.end; ++i) sum += points[size_t{sorted[i]} * d + j];
    partial[size_t{blockIdx.x} * d + j] = sum;
  }
}

// Block c adds its slices [slice_begin[c], slice_begin[c+1]) to sums[c], in order.
__global__ void FoldKernel(const double* __restrict__ partial,
                           const uint32_t* __restrict__ slice_begin, uint32_t d,
                           double* __restrict__ sums) {
  const uint32_t c = blockIdx.x;
  for (uint32_t j = threadIdx.x; j < d; j += blockDim.x) {
    double sum = sums[size_t{c} * d + j];
    for (uint32_t s = slice_begin[c]; s < slice_begin[c + 1]; ++s)
      sum += partial[size_t{s} * d + j];
    sums[size_t{c} * d + j] = sum;
  }
}

__global__ void MeanKernel(const double* __restrict__ sums,
                           const unsigned long long* __restrict__ counts, uint32_t k, uint32_t d,
                           float* __restrict__ out) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= size_t{k} * d) return;
  const unsigned long long count = counts[i / d];
  out[i] = count == 0 ? 0.0f : static_cast<float>(sums[i] / static_cast<double>(count));
}

int KeyBits(size_t k) {
  int bits = 1;
  while (bits < 32 && (size_t{1} << bits) < k) ++bits;
  return bits;
}

}  // namespace

Outcome UpdateCentroids(const float* points, size_t n, size_t d, const uint32_t* labels, size_t k,
                        float* centroids, uint32_t* sizes, const Config& config) {
  const float* retained = FindRetained(points, n, d);
  // Device bytes per row: points (unless retained), labels in/out, rows in/out, slice share.
  const size_t per_row =
      (retained != nullptr ? 0 : d * sizeof(float)) + 16 + 8 * d / kSliceRows + 8;
  const size_t rows = ChunkRows(n, per_row, 1, config.budget_bytes);
  const size_t max_slices = rows / kSliceRows + k;
  Stream stream;
  SHOAL_CUDA_TRY(stream.Create());
  cudaStream_t st = stream.get();
  DeviceBuffer d_points, d_labels, d_sorted_labels, d_rows, d_sorted_rows, d_counts, d_slices,
      d_slice_begin, d_partial, d_sums, d_total, d_bad, d_temp, d_mean;
  if (retained == nullptr) SHOAL_CUDA_TRY(d_points.Allocate(rows * d * sizeof(float)));
  SHOAL_CUDA_TRY(d_labels.Allocate(rows * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_sorted_labels.Allocate(rows * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_rows.Allocate(rows * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_sorted_rows.Allocate(rows * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_counts.Allocate(k * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_slices.Allocate(max_slices * sizeof(Slice)));
  SHOAL_CUDA_TRY(d_slice_begin.Allocate((k + 1) * sizeof(uint32_t)));
  SHOAL_CUDA_TRY(d_partial.Allocate(max_slices * d * sizeof(double)));
  SHOAL_CUDA_TRY(d_sums.Allocate(k * d * sizeof(double)));
  SHOAL_CUDA_TRY(d_total.Allocate(k * sizeof(unsigned long long)));
  SHOAL_CUDA_TRY(d_bad.Allocate(sizeof(unsigned long long)));
  SHOAL_CUDA_TRY(d_mean.Allocate(k * d * sizeof(float)));
  SHOAL_CUDA_TRY(cudaMemsetAsync(d_sums.get<void>(), 0, k * d * sizeof(double), st));
  SHOAL_CUDA_TRY(cudaMemsetAsync(d_bad.get<void>(), 0xFF, sizeof(unsigned long long), st));
  const int bits = KeyBits(k);
  size_t temp_bytes = 0;
  SHOAL_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, d_labels.get<uint32_t>(), d_sorted_labels.get<uint32_t>(),
      d_rows.get<uint32_t>(), d_sorted_rows.get<uint32_t>(), static_cast<int>(rows), 0, bits, st));
  SHOAL_CUDA_TRY(d_temp.Allocate(temp_bytes));

  std::vector<uint32_t> counts(k), slice_begin(k + 1);
  std::vector<unsigned long long> total(k, 0);
  std::vector<Slice> slices;
  for (size_t first = 0; first < n; first += rows) {
    const auto count = static_cast<uint32_t>(std::min(rows, n - first));
    const float* chunk_points = retained != nullptr ? retained + first * d : d_points.get<float>();
    if (retained == nullptr) {
      // Pageable source: the copy is synchronous; the update is one pass, bandwidth-bound.
      SHOAL_CUDA_TRY(cudaMemcpyAsync(d_points.get<float>(), points + first * d,
                                     size_t{count} * d * sizeof(float), cudaMemcpyHostToDevice,
                                     st));
    }
    SHOAL_CUDA_TRY(cudaMemcpyAsync(d_labels.get<uint32_t>(), labels + first,
                                   count * sizeof(uint32_t), cudaMemcpyHostToDevice, st));
    SHOAL_CUDA_TRY(cudaMemsetAsync(d_counts.get<void>(), 0, k * sizeof(uint32_t), st));
    HistogramKernel<<<(count + 255) / 256, 256, 0, st>>>(
        d_labels.get<uint32_t>(), count, static_cast<uint32_t>(k), first, d_counts.get<uint32_t>(),
        d_bad.get<unsigned long long>(), d_rows.get<uint32_t>());
    SHOAL_CUDA_TRY(cudaGetLastError());
    unsigned long long first_bad = 0;
    SHOAL_CUDA_TRY(cudaMemcpyAsync(&first_bad, d_bad.get<void>(), sizeof(first_bad),
                                   cudaMemcpyDeviceToHost, st));
    SHOAL_CUDA_TRY(cudaMemcpyAsync(counts.data(), d_counts.get<void>(), k * sizeof(uint32_t),
                                   cudaMemcpyDeviceToHost, st));
    SHOAL_CUDA_TRY(cudaStreamSynchronize(st));
    if (first_bad != ~0ull) return {nullptr, static_cast<int64_t>(first_bad)};
    SHOAL_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
        d_temp.get<void>(), temp_bytes, d_labels.get<uint32_t>(), d_sorted_labels.get<uint32_t>(),
        d_rows.get<uint32_t>(), d_sorted_rows.get<uint32_t>(), static_cast<int>(count), 0, bits,
        st));
    slices.clear();
    uint32_t position = 0;
    for (size_t c = 0; c < k; ++c) {
      slice_begin[c] = static_cast<uint32_t>(slices.size());
      for (uint32_t b = 0; b < counts[c]; b += kSliceRows) {
        slices.push_back({position + b, position + std::min(counts[c], b + kSliceRows)});
      }
      position += counts[c];
      total[c] += counts[c];
    }
    slice_begin[k] = static_cast<uint32_t>(slices.size());
    SHOAL_CUDA_TRY(cudaMemcpyAsync(d_slices.get<Slice>(), slices.data(),
                                   slices.size() * sizeof(Slice), cudaMemcpyHostToDevice, st));
    SHOAL_CUDA_TRY(cudaMemcpyAsync(d_slice_begin.get<uint32_t>(), slice_begin.data(),
                                   (k + 1) * sizeof(uint32_t), cudaMemcpyHostToDevice, st));
    if (!slices.empty()) {
      SliceSumKernel<<<static_cast<unsigned>(slices.size()), kReduceThreads, 0, st>>>(
          chunk_points, static_cast<uint32_t>(d), d_sorted_rows.get<uint32_t>(),
          d_slices.get<Slice>(), d_partial.get<double>());
    }
    FoldKernel<<<static_cast<unsigned>(k), kReduceThreads, 0, st>>>(
        d_partial.get<double>(), d_slice_begin.get<uint32_t>(), static_cast<uint32_t>(d),
        d_sums.get<double>());
    SHOAL_CUDA_TRY(cudaGetLastError());
    SHOAL_CUDA_TRY(cudaStreamSynchronize(st));  // slices/slice_begin are reused next chunk
  }
  SHOAL_CUDA_TRY(cudaMemcpyAsync(d_total.get<void>(), total.data(), k * sizeof(unsigned long long),
                                 cudaMemcpyHostToDevice, st));
  const size_t cells = k * d;
  MeanKernel<<<static_cast<unsigned>((cells + 255) / 256), 256, 0, st>>>(
      d_sums.get<double>(), d_total.get<unsigned long long>(), static_cast<uint32_t>(k),
      static_cast<uint32_t>(d), d_mean.get<float>());
  SHOAL_CUDA_TRY(cudaGetLastError());
  std::vector<float> mean(cells);
  SHOAL_CUDA_TRY(cudaMemcpyAsync(mean.data(), d_mean.get<void>(), cells * sizeof(float),
                                 cudaMemcpyDeviceToHost, st));
  SHOAL_CUDA_TRY(cudaStreamSynchronize(st));
  for (size_t c = 0; c < k; ++c) {
    if (total[c] != 0) std::memcpy(centroids + c * d, &mean[c * d], d * sizeof(float));
    if (sizes != nullptr) sizes[c] = static_cast<uint32_t>(total[c]);
  }
  return {};
}

}  // namespace shoal::index::gpu::backend
