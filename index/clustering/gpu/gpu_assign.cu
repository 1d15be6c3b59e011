// AssignTopM on the device: host preparation (shift, biases, error bound), then the points in
// chunks. Chunks rotate over up to three slots, each with its own stream, device buffers and
// pinned staging: while one slot's kernels run, the next slot's points are copied in and the
// previous slot's labels copied out. Retained points (GpuRetainPoints) skip the copies.
// TF32 per chunk: ShiftKernel, cuBLAS's TF32 SGEMM into a chunk x k block of dot products (at
// most 1 GiB) and ScanKernel (Tf32TopMKernel instead when cuBLAS is missing), then
// RefineKernel and ExactTopMKernel for the flagged rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "index/clustering/gpu/gpu_assign_kernels.cuh"
#include "index/clustering/gpu/gpu_cublas.cuh"
#include "index/clustering/gpu/gpu_error_bound.h"

namespace shoal::index::gpu::backend {
namespace {

// Dot products per chunk of the cuBLAS path (1 GiB): bounds the block that exists at once.
constexpr size_t kMaxDots = size_t{1} << 28;

const char* ErrorOf(cudaError_t e) { return e == cudaSuccess ? nullptr : cudaGetErrorString(e); }

// Host-side constants of one call, uploaded once.
struct Prepared {
  DeviceBuffer centroids, shifted, shift, lane_bias, bias;
  AssignArgs args{};
};

Outcome Prepare(const float* centroids, size_t k, size_t d, size_t m, const float* bias,
                Prepared* p) {
  std::vector<double> mean(d, 0.0);
  for (size_t c = 0; c < k; ++c) {
    for (size_t j = 0; j < d; ++j) mean[j] += centroids[c * d + j];
  }
  std::vector<float> shift(d), shifted(k * d), lane_bias(k);
  for (size_t j = 0; j < d; ++j) shift[j] = static_cast<float>(mean[j] / static_cast<double>(k));
  float cmax = 0, bmax = 0;
  for (size_t c = 0; c < k; ++c) {
    float norm = 0;
    for (size_t j = 0; j < d; ++j) {
      const float v = centroids[c * d + j] - shift[j];
      shifted[c * d + j] = RoundToTf32(v);  // the GEMM's operand; the norm is of v
      norm = std::fma(v, v, norm);
    }
    const float b = bias != nullptr ? bias[c] : 0.0f;
    lane_bias[c] = norm + b;
    cmax = std::max(cmax, std::sqrt(norm));
    bmax = std::max(bmax, std::fabs(b));
  }
  SHOAL_CUDA_TRY(p->centroids.Allocate(k * d * sizeof(float)));
  SHOAL_CUDA_TRY(p->shifted.Allocate(k * d * sizeof(float)));
  SHOAL_CUDA_TRY(p->shift.Allocate(d * sizeof(float)));
  SHOAL_CUDA_TRY(p->lane_bias.Allocate(k * sizeof(float)));
  SHOAL_CUDA_TRY(cudaMemcpy(p->centroids.get<float>(), centroids, k * d * sizeof(float),
                            cudaMemcpyHostToDevice));
  SHOAL_CUDA_TRY(cudaMemcpy(p->shifted.get<float>(), shifted.data(), k * d * sizeof(float),
                            cudaMemcpyHostToDevice));
  SHOAL_CUDA_TRY(
      cudaMemcpy(p->shift.get<float>(), shift.data(), d * sizeof(float), cudaMemcpyHostToDevice));
  SHOAL_CUDA_TRY(cudaMemcpy(p->lane_bias.get<float>(), lane_bias.data(), k * sizeof(float),
                            cudaMemcpyHostToDevice));
  if (bias != nullptr) {
    SHOAL_CUDA_TRY(p->bias.Allocate(k * sizeof(float)));
    SHOAL_CUDA_TRY(
        cudaMemcpy(p->bias.get<float>(), bias, k * sizeof(float), cudaMemcpyHostToDevice));
  }
  AssignArgs& a = p->args;
  a.centroids = p->centroids.get<float>();
  a.shifted = p->shifted.get<float>();
  a.shift = p->shift.get<float>();
  a.lane_bias = p->lane_bias.get<float>();
  a.bias = bias != nullptr ? p->bias.get<float>() : nullptr;
  a.k = static_cast<uint32_t>(k);
  a.d = static_cast<uint32_t>(d);
  a.m = static_cast<uint32_t>(m);
  a.cmax = cmax;
  a.bound = Tf32ErrorBound::For(a.d, bmax);
  return {};
}

// One slot of the chunk rotation. Its buffers come from the kept blocks (gpu_device.cuh) and go
// back to them once the stream's work is done.
struct Slot {
  Slot() = default;
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() {
    if (stream.get() != nullptr) cudaStreamSynchronize(stream.get());
  }

  Stream stream;
  DeviceBuffer points, shifted, norms, dots, cand_score, cand_id, cand_count, labels, distances,
      flagged, flagged_count;
  PinnedBuffer in, out_labels, out_distances;
  size_t first = 0, rows = 0;  // the chunk in flight
  bool busy = false;
};

// Candidates ScanKernel keeps per point for RefineKernel. k-means (m = 1) keeps 32. Top-m lists
// (m > 1) over many close centroids, a tree's leaves, have more rivals within the error bound
// of the m-th: a point whose rivals do not fit goes to the full exact scan over all k.
uint32_t KeepFor(size_t m) { return m == 1 ? 32 : 128; }

// TOPM (>= m): the list for the m-th best score (approximate in the scan, exact in the
// refinement and the full exact scans).
template <int TOPM>
class ChunkedAssign {
 public:
  ChunkedAssign(const float* points, size_t n, size_t k, size_t d, size_t m, bool tf32,
                uint32_t* labels, float* distances)
      : points_(points),
        n_(n),
        k_(k),
        d_(d),
        m_(m),
        tf32_(tf32),
        labels_(labels),
        distances_(distances) {}

  Outcome Run(const Prepared& p, const Config& config) {
    const float* retained = FindRetained(points_, n_, d_);
    if (tf32_) cublas_ = std::make_unique<CublasGemm>();
    const bool gemm = tf32_ && cublas_->ok();
    args_ = p.args;
    args_.keep = gemm ? KeepFor(m_) : kKeep;
    const size_t per_row = (retained != nullptr ? 0 : d_ * sizeof(float)) +
                           (tf32_ ? (d_ + 1) * sizeof(float) + args_.keep * 8 + 8 : 0) +
                           (gemm ? k_ * sizeof(float) : 0) + m_ * 8;
    // Retained points need no copies, but two slots still let one chunk's GEMM overlap the
    // other's scan and refinement.
    const int slots = retained != nullptr ? std::min(2, config.streams) : config.streams;
    size_t rows = ChunkRows(n_, per_row, slots, config.budget_bytes);
    if (gemm) rows = std::max<size_t>(1, std::min(rows, kMaxDots / k_));
    DeviceBuffer bad;
    SHOAL_CUDA_TRY(bad.Allocate(sizeof(unsigned long long)));
    SHOAL_CUDA_TRY(cudaMemset(bad.get<void>(), 0xFF, sizeof(unsigned long long)));
    // Prepare's copies and this memset ran on the legacy default stream, which the slots'
    // non-blocking streams do not wait for.
    SHOAL_CUDA_TRY(cudaStreamSynchronize(nullptr));
    // No more slots than chunks; and one chunk is copied straight from the caller's memory: no
    // copy to overlap, so pinning a staging buffer as large as the points would only add time.
    const size_t chunks = (n_ + rows - 1) / rows;
    direct_ = retained == nullptr && chunks == 1;
    std::vector<std::unique_ptr<Slot>> slot(std::min<size_t>(slots, chunks));
    for (auto& s : slot) {
      s = std::make_unique<Slot>();
      if (Outcome o = Allocate(*s, rows, retained != nullptr); o.error != nullptr) return o;
    }
    size_t chunk = 0;
    for (size_t first = 0; first < n_; first += rows, ++chunk) {
      Slot& s = *slot[chunk % slot.size()];
      if (Outcome o = Drain(s); o.error != nullptr) return o;
      s.first = first;
      s.rows = std::min(rows, n_ - first);
      const float* device_points = retained != nullptr ? retained + first * d_ : nullptr;
      if (device_points == nullptr) {
        const size_t bytes = s.rows * d_ * sizeof(float);
        const float* from = points_ + first * d_;
        if (!direct_) from = static_cast<const float*>(std::memcpy(s.in.get<float>(), from, bytes));
        SHOAL_CUDA_TRY(cudaMemcpyAsync(s.points.get<float>(), from, bytes, cudaMemcpyHostToDevice,
                                       s.stream.get()));
        LaunchFindNonFinite(s.points.get<float>(), s.rows, d_, first, bad.get<unsigned long long>(),
                            s.stream.get());
        device_points = s.points.get<float>();
      }
      if (const char* error = Launch(s, device_points, args_); error != nullptr) return {error};
      SHOAL_CUDA_TRY(cudaMemcpyAsync(s.out_labels.get<uint32_t>(), s.labels.get<uint32_t>(),
                                     s.rows * m_ * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                     s.stream.get()));
      if (distances_ != nullptr) {
        SHOAL_CUDA_TRY(cudaMemcpyAsync(s.out_distances.get<float>(), s.distances.get<float>(),
                                       s.rows * m_ * sizeof(float), cudaMemcpyDeviceToHost,
                                       s.stream.get()));
      }
      SHOAL_CUDA_TRY(cudaEventRecord(s.stream.event(), s.stream.get()));
      s.busy = true;
    }
    for (auto& s : slot) {
      if (Outcome o = Drain(*s); o.error != nullptr) return o;
    }
    unsigned long long first_bad = 0;
    SHOAL_CUDA_TRY(
        cudaMemcpy(&first_bad, bad.get<void>(), sizeof(first_bad), cudaMemcpyDeviceToHost));
    if (first_bad != ~0ull) return {nullptr, static_cast<int64_t>(first_bad)};
    return {};
  }

 private:
  Outcome Allocate(Slot& s, size_t rows, bool retained) {
    SHOAL_CUDA_TRY(s.stream.Create());
    if (!retained) {
      SHOAL_CUDA_TRY(s.points.AllocateCached(rows * d_ * sizeof(float)));
      if (!direct_) SHOAL_CUDA_TRY(s.in.Allocate(rows * d_ * sizeof(float)));
    }
    if (tf32_) {
      SHOAL_CUDA_TRY(s.shifted.AllocateCached(rows * d_ * sizeof(float)));
      SHOAL_CUDA_TRY(s.norms.AllocateCached(rows * sizeof(float)));
      if (cublas_->ok()) {
        SHOAL_CUDA_TRY(s.dots.AllocateCached(rows * k_ * sizeof(float)));
        SHOAL_CUDA_TRY(s.cand_count.AllocateCached(rows * sizeof(uint32_t)));
      }
      SHOAL_CUDA_TRY(s.cand_score.AllocateCached(rows * args_.keep * sizeof(float)));
      SHOAL_CUDA_TRY(s.cand_id.AllocateCached(rows * args_.keep * sizeof(uint32_t)));
      SHOAL_CUDA_TRY(s.flagged.AllocateCached(rows * sizeof(uint32_t)));
      SHOAL_CUDA_TRY(s.flagged_count.AllocateCached(sizeof(uint32_t)));
    }
    SHOAL_CUDA_TRY(s.labels.AllocateCached(rows * m_ * sizeof(uint32_t)));
    SHOAL_CUDA_TRY(s.distances.AllocateCached(rows * m_ * sizeof(float)));
    SHOAL_CUDA_TRY(s.out_labels.Allocate(rows * m_ * sizeof(uint32_t)));
    if (distances_ != nullptr) SHOAL_CUDA_TRY(s.out_distances.Allocate(rows * m_ * sizeof(float)));
    return {};
  }

  // Null, or what failed.
  const char* Launch(Slot& s, const float* device_points, const AssignArgs& args) {
    const auto count = static_cast<uint32_t>(s.rows);
    const unsigned exact_blocks = (count + kExactThreads - 1) / kExactThreads;
    cudaStream_t stream = s.stream.get();
    if (!tf32_) {
      ExactTopMKernel<TOPM><<<exact_blocks, kExactThreads, 0, stream>>>(
          device_points, count, nullptr, nullptr, args, s.labels.get<uint32_t>(),
          s.distances.get<float>());
      return ErrorOf(cudaGetLastError());
    }
    ShiftKernel<<<(count + 7) / 8, 256, 0, stream>>>(device_points, count, args.d, args.shift,
                                                     s.shifted.get<float>(), s.norms.get<float>());
    if (cublas_->ok()) {
      if (const char* error = cublas_->TransposedTimes(
              stream, static_cast<int>(count), static_cast<int>(args.k), static_cast<int>(args.d),
              s.shifted.get<float>(), args.shifted, s.dots.get<float>());
          error != nullptr) {
        return error;
      }
      if (count >= kScanWideRows) {
        LaunchScan<128>(s, count, args);
      } else {
        LaunchScan<32>(s, count, args);
      }
    } else {
      Tf32TopMKernel<<<(count + kTcPoints - 1) / kTcPoints, kTcThreads, 0, stream>>>(
          device_points, count, args, s.cand_score.get<float>(), s.cand_id.get<uint32_t>());
    }
    if (cudaError_t e = cudaMemsetAsync(s.flagged_count.get<void>(), 0, sizeof(uint32_t), stream);
        e != cudaSuccess) {
      return cudaGetErrorString(e);
    }
    RefineKernel<TOPM>
        <<<(count + kRefineThreads - 1) / kRefineThreads, kRefineThreads, 0, stream>>>(
            device_points, count, args, s.norms.get<float>(), s.cand_score.get<float>(),
            s.cand_id.get<uint32_t>(), cublas_->ok() ? s.cand_count.get<uint32_t>() : nullptr,
            s.labels.get<uint32_t>(), s.distances.get<float>(), s.flagged.get<uint32_t>(),
            s.flagged_count.get<uint32_t>());
    // Sized for every row; blocks past the flagged count return at once.
    ExactTopMKernel<TOPM><<<exact_blocks, kExactThreads, 0, stream>>>(
        device_points, count, s.flagged.get<uint32_t>(), s.flagged_count.get<uint32_t>(), args,
        s.labels.get<uint32_t>(), s.distances.get<float>());
    return ErrorOf(cudaGetLastError());
  }

  template <int POINTS>
  void LaunchScan(Slot& s, uint32_t count, const AssignArgs& args) {
    ScanKernel<TOPM, POINTS>
        <<<(count + POINTS - 1) / POINTS, dim3(POINTS, kScanThreads / POINTS), 0, s.stream.get()>>>(
            s.dots.get<float>(), count, args, s.norms.get<float>(), s.cand_score.get<float>(),
            s.cand_id.get<uint32_t>(), s.cand_count.get<uint32_t>());
  }

  // Waits for the slot's chunk (if any) and copies its results to the caller's arrays.
  Outcome Drain(Slot& s) {
    if (!s.busy) return {};
    SHOAL_CUDA_TRY(cudaEventSynchronize(s.stream.event()));
    std::memcpy(labels_ + s.first * m_, s.out_labels.get<uint32_t>(),
                s.rows * m_ * sizeof(uint32_t));
    if (distances_ != nullptr) {
      std::memcpy(distances_ + s.first * m_, s.out_distances.get<float>(),
                  s.rows * m_ * sizeof(float));
    }
    s.busy = false;
    return {};
  }

  const float* points_;
  size_t n_, k_, d_, m_;
  AssignArgs args_{};    // Prepare's, with the kept candidates per point
  bool direct_ = false;  // the points copied from the caller's memory, not pinned staging
  bool tf32_;
  std::unique_ptr<CublasGemm> cublas_;  // TF32 only
  uint32_t* labels_;
  float* distances_;
};

}  // namespace

Outcome AssignTopM(const float* points, size_t n, const float* centroids, size_t k, size_t d,
                   size_t m, const float* bias, uint32_t* labels, float* distances,
                   const Config& config) {
  int device = 0, major = 0;
  SHOAL_CUDA_TRY(cudaGetDevice(&device));
  SHOAL_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  const bool tf32 = config.tf32 && major >= 8;
  Prepared prepared;
  if (Outcome o = Prepare(centroids, k, d, m, bias, &prepared); o.error != nullptr) return o;
  // The list for the m-th best score is as short as m allows: every score pays its upkeep.
  if (m == 1) {
    return ChunkedAssign<1>(points, n, k, d, m, tf32, labels, distances).Run(prepared, config);
  }
  if (m <= 4) {
    return ChunkedAssign<4>(points, n, k, d, m, tf32, labels, distances).Run(prepared, config);
  }
  if (m <= 8) {
    return ChunkedAssign<8>(points, n, k, d, m, tf32, labels, distances).Run(prepared, config);
  }
  return ChunkedAssign<32>(points, n, k, d, m, tf32, labels, distances).Run(prepared, config);
}

}  // namespace shoal::index::gpu::backend
