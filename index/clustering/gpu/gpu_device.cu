// Device discovery, chunk sizing, the NaN scan and the registry of retained point sets.
#include <cstdio>
#include <mutex>
#include <vector>

#include "index/clustering/gpu/gpu_device.cuh"

namespace shoal::index::gpu::backend {
namespace {

struct Retained {
  const float* host;
  size_t n, d;
  float* device;
};

std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::vector<Retained>& Registry() {
  static auto* registry = new std::vector<Retained>();
  return *registry;
}

__global__ void FindNonFiniteKernel(const float* __restrict__ rows, size_t count, size_t d,
                                    uint64_t first_row, unsigned long long* bad) {
  const size_t total = count * d;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    if (!isfinite(rows[i])) atomicMin(bad, static_cast<unsigned long long>(first_row + i / d));
  }
}

}  // namespace

bool Compiled() { return true; }

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls start clean
    return 0;
  }
  return count;
}

const char* Describe() {
  thread_local char text[640];
  cudaDeviceProp prop;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    return "unknown CUDA device";
  }
  std::snprintf(text, sizeof(text), "%s, sm_%d%d, %d SMs, %.0f GiB", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return text;
}

size_t ChunkRows(size_t n, size_t bytes_per_row, int slots, size_t budget) {
  if (budget == 0) {
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) free_bytes = size_t{1} << 30;
    budget = free_bytes / 2;
  }
  const size_t rows = budget / (bytes_per_row * static_cast<size_t>(slots));
  return rows < 1 ? 1 : (rows > n ? n : rows);
}

void LaunchFindNonFinite(const float* rows, size_t count, size_t d, uint64_t first_row,
                         unsigned long long* bad, cudaStream_t stream) {
  const size_t total = count * d;
  const size_t blocks = (total + 255) / 256;
  FindNonFiniteKernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(
      rows, count, d, first_row, bad);
}

const float* FindRetained(const float* points, size_t n, size_t d) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const Retained& r : Registry()) {
    if (r.host == points && r.n == n && r.d == d) return r.device;
  }
  return nullptr;
}

void* Retain(const float* points, size_t n, size_t d, const Config& config) {
  const size_t bytes = n * d * sizeof(float);
  if (ChunkRows(n, d * sizeof(float), 1, config.budget_bytes) < n) return nullptr;
  float* device = nullptr;
  if (cudaMalloc(&device, bytes) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  unsigned long long* bad = nullptr;
  unsigned long long found = ~0ull;
  bool ok = cudaMalloc(&bad, sizeof(*bad)) == cudaSuccess &&
            cudaMemcpy(device, points, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(bad, &found, sizeof(found), cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    LaunchFindNonFinite(device, n, d, 0, bad, nullptr);
    ok = cudaMemcpy(&found, bad, sizeof(found), cudaMemcpyDeviceToHost) == cudaSuccess &&
         found == ~0ull;
  }
  if (bad != nullptr) cudaFree(bad);
  if (!ok) {
    cudaGetLastError();
    cudaFree(device);
    return nullptr;
  }
  auto* handle = new Retained{points, n, d, device};
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(*handle);
  return handle;
}

void Release(void* handle) {
  auto* retained = static_cast<Retained*>(handle);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    std::vector<Retained>& registry = Registry();
    for (size_t i = 0; i < registry.size(); ++i) {
      if (registry[i].device == retained->device) {
        registry.erase(registry.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  cudaFree(retained->device);
  delete retained;
}

}  // namespace shoal::index::gpu::backend
