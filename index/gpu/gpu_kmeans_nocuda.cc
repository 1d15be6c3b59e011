// Backend for builds without CUDA: no devices, and assignment is never reached.
#include "index/gpu/gpu_kmeans_backend.h"

namespace shoal::index::gpu::backend {

bool Compiled() { return false; }

int DeviceCount() { return 0; }

const char* AssignNearest(const float*, size_t, const float*, size_t, size_t, uint32_t*, float*) {
  return "built without CUDA";
}

}  // namespace shoal::index::gpu::backend
