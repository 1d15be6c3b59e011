// Backend for builds without CUDA: no devices, and the device calls are never reached
// (gpu_kmeans.cc reports Unavailable first).
#include "index/clustering/gpu/gpu_kmeans_backend.h"

namespace shoal::index::gpu::backend {

bool Compiled() { return false; }

int DeviceCount() { return 0; }

const char* Describe() { return "built without CUDA"; }

Outcome AssignTopM(const float*, size_t, const float*, size_t, size_t, size_t, const float*,
                   uint32_t*, float*, const Config&) {
  return {"built without CUDA", -1};
}

Outcome UpdateCentroids(const float*, size_t, size_t, const uint32_t*, size_t, float*, uint32_t*,
                        const Config&) {
  return {"built without CUDA", -1};
}

void* Retain(const float*, size_t, size_t, const Config&) { return nullptr; }

void Release(void*) {}

}  // namespace shoal::index::gpu::backend
