#include "bench/blas_env.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

extern "C" char* openblas_get_corename();
extern "C" void openblas_set_num_threads(int threads);

namespace shoal::bench {
namespace {

constexpr char kReexecMarker[] = "SHOAL_BENCH_REEXECED";

// Sets name=value unless already set; true if it set it.
bool SetDefault(const char* name, const char* value) {
  if (getenv(name) != nullptr) return false;
  setenv(name, value, /*overwrite=*/0);
  return true;
}

std::string Describe(const char* name) {
  const char* value = getenv(name);
  return absl::StrCat(name, "=", value != nullptr ? value : "(unset)");
}

}  // namespace

void PrepareBlasEnvironment(char** argv) {
  if (getenv(kReexecMarker) != nullptr) return;  // never loop
  bool changed = SetDefault("OPENBLAS_CORETYPE", "SkylakeX");
  changed = SetDefault("OMP_WAIT_POLICY", "PASSIVE") || changed;
  if (!changed) return;
  setenv(kReexecMarker, "1", 1);
  execv("/proc/self/exe", argv);
  std::perror("shoal_bench: re-exec to set OPENBLAS_CORETYPE/OMP_WAIT_POLICY failed");
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads); }

std::string BlasDescription() {
  const char* core = openblas_get_corename();
  return absl::StrCat(core != nullptr ? core : "unknown", " (", Describe("OPENBLAS_CORETYPE"), ", ",
                      Describe("OMP_WAIT_POLICY"),
                      getenv(kReexecMarker) != nullptr ? ", set by shoal_bench)" : ")");
}

}  // namespace shoal::bench
