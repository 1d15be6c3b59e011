// Device discovery, chunk sizing, the NaN scan and the registry of retained point sets.
#include <algorithm>
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

// The kept blocks (TakeCached/GiveCached), oldest first.
struct CachedBlock {
  bool pinned;
  int device;  // -1 for pinned host memory
  void* ptr;
  size_t bytes;
};
std::mutex& CacheMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::vector<CachedBlock>& Cache() {
  static auto* cache = new std::vector<CachedBlock>();
  return *cache;
}

void FreeBlock(const CachedBlock& b) {
  if (b.pinned) {
    cudaFreeHost(b.ptr);
  } else {
    cudaFree(b.ptr);
  }
}

// Frees the oldest kept blocks of one kind (a device's, or pinned) until at most `limit` bytes
// of it are kept.
void TrimCached(bool pinned, int device, size_t limit) {
  std::vector<CachedBlock> freed;
  {
    std::lock_guard<std::mutex> lock(CacheMutex());
    auto& cache = Cache();
    size_t kept = 0;
    for (const CachedBlock& b : cache) {
      if (b.pinned == pinned && b.device == device) kept += b.bytes;
    }
    for (size_t i = 0; kept > limit && i < cache.size();) {
      if (cache[i].pinned == pinned && cache[i].device == device) {
        kept -= cache[i].bytes;
        freed.push_back(cache[i]);
        cache.erase(cache.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  for (const CachedBlock& b : freed) FreeBlock(b);
}

size_t CacheLimit(bool pinned) {
  if (pinned) return size_t{1} << 30;
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return 0;
  return std::min(size_t{4} << 30, total / 8);
}

}  // namespace

void* TakeCached(bool pinned, size_t bytes, cudaError_t* error) {
  int device = -1;
  if (!pinned && (*error = cudaGetDevice(&device)) != cudaSuccess) return nullptr;
  {
    std::lock_guard<std::mutex> lock(CacheMutex());
    auto& cache = Cache();
    size_t best = cache.size();
    for (size_t i = 0; i < cache.size(); ++i) {
      const CachedBlock& b = cache[i];
      if (b.pinned == pinned && b.device == device && b.bytes >= bytes && b.bytes / 2 <= bytes &&
          (best == cache.size() || b.bytes < cache[best].bytes)) {
        best = i;
      }
    }
    if (best != cache.size()) {
      void* ptr = cache[best].ptr;
      cache.erase(cache.begin() + static_cast<std::ptrdiff_t>(best));
      *error = cudaSuccess;
      return ptr;
    }
  }
  void* ptr = nullptr;
  for (int attempt = 0; attempt < 2; ++attempt) {
    *error = pinned ? cudaMallocHost(&ptr, bytes) : cudaMalloc(&ptr, bytes);
    if (*error != cudaErrorMemoryAllocation) break;
    cudaGetLastError();  // clear it: the retry (or the caller) starts clean
    TrimCached(pinned, device, 0);
  }
  return *error == cudaSuccess ? ptr : nullptr;
}

void GiveCached(bool pinned, void* ptr, size_t bytes) {
  int device = -1;
  if (!pinned && cudaGetDevice(&device) != cudaSuccess) {
    cudaFree(ptr);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(CacheMutex());
    Cache().push_back({pinned, device, ptr, bytes});
  }
  TrimCached(pinned, device, CacheLimit(pinned));
}

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
