// CublasGemm: cuBLAS through dlopen (see gpu_cublas.cuh). Only cublas_v2.h's types are used at
// compile time; the four functions are looked up in libcublas.so.<CUBLAS_VER_MAJOR>.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "index/clustering/gpu/gpu_cublas.cuh"

namespace shoal::index::gpu::backend {
namespace {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

// The loaded library, or null; loaded once, never unloaded.
const CublasApi* Api() {
  static const CublasApi* api = []() -> const CublasApi* {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return nullptr;
    auto* loaded = new CublasApi;
    loaded->create = reinterpret_cast<decltype(loaded->create)>(dlsym(lib, "cublasCreate_v2"));
    loaded->set_stream =
        reinterpret_cast<decltype(loaded->set_stream)>(dlsym(lib, "cublasSetStream_v2"));
    loaded->set_math_mode =
        reinterpret_cast<decltype(loaded->set_math_mode)>(dlsym(lib, "cublasSetMathMode"));
    loaded->sgemm = reinterpret_cast<decltype(loaded->sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    if (loaded->create == nullptr || loaded->set_stream == nullptr ||
        loaded->set_math_mode == nullptr || loaded->sgemm == nullptr) {
      delete loaded;
      return nullptr;
    }
    return loaded;
  }();
  return api;
}

// Idle handles by device. Handles live as long as the process (destroying them at exit could
// run after the CUDA runtime is torn down).
std::mutex& PoolMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::vector<std::pair<int, cublasHandle_t>>& Pool() {
  static auto* pool = new std::vector<std::pair<int, cublasHandle_t>>();
  return *pool;
}

}  // namespace

CublasGemm::CublasGemm() {
  const CublasApi* api = Api();
  if (api == nullptr || cudaGetDevice(&device_) != cudaSuccess) return;
  {
    std::lock_guard<std::mutex> lock(PoolMutex());
    auto& pool = Pool();
    for (size_t i = 0; i < pool.size(); ++i) {
      if (pool[i].first == device_) {
        handle_ = pool[i].second;
        pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }
  cublasHandle_t handle = nullptr;
  if (api->create(&handle) != CUBLAS_STATUS_SUCCESS) return;
  // Without TF32 tensor cores (not expected) the product is plain fp32: slower, never less exact.
  api->set_math_mode(handle, CUBLAS_TF32_TENSOR_OP_MATH);
  handle_ = handle;
}

CublasGemm::~CublasGemm() {
  if (handle_ == nullptr) return;
  std::lock_guard<std::mutex> lock(PoolMutex());
  Pool().emplace_back(device_, static_cast<cublasHandle_t>(handle_));
}

const char* CublasGemm::TransposedTimes(cudaStream_t stream, int m, int n, int k, const float* a,
                                        const float* b, float* c) const {
  const CublasApi* api = Api();
  auto handle = static_cast<cublasHandle_t>(handle_);
  if (api->set_stream(handle, stream) != CUBLAS_STATUS_SUCCESS) return "cublasSetStream failed";
  const float one = 1.0f, zero = 0.0f;
  if (api->sgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, a, k, b, k, &zero, c, m) !=
      CUBLAS_STATUS_SUCCESS) {
    return "cublasSgemm failed";
  }
  return nullptr;
}

}  // namespace shoal::index::gpu::backend
