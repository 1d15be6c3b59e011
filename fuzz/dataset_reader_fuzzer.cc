// Fuzzes the dataset readers (include/shoal/dataset.h) on a file holding the input: the first
// byte picks the extension (fvecs, bvecs, ivecs, fbin, u8bin, ibin, npy, idx), the rest is the
// file. ReadVectors, ReadIntVectors and VectorReader must reject bad files, never crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "shoal/dataset.h"

namespace {

const char* const kExtensions[] = {".fvecs", ".bvecs", ".ivecs", ".fbin",
                                   ".u8bin", ".ibin",  ".npy",   ".idx"};

std::string TempPath(const char* extension) {
  return "/tmp/shoal_dataset_fuzz_" + std::to_string(getpid()) + extension;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* extension = kExtensions[data[0] % (sizeof(kExtensions) / sizeof(kExtensions[0]))];
  const std::string path = TempPath(extension);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 1 && std::fwrite(data + 1, 1, size - 1, file) != size - 1) std::abort();
  std::fclose(file);

  // A row cap keeps a header that claims a huge matrix from allocating it.
  (void)shoal::ReadVectors(path, 64);
  (void)shoal::ReadIntVectors(path, 64);
  absl::StatusOr<std::unique_ptr<shoal::VectorReader>> reader = shoal::VectorReader::Open(path);
  if (reader.ok() && (*reader)->rows() > 0 && (*reader)->cols() <= (1u << 16)) {
    const size_t cols = (*reader)->cols();
    std::vector<float> row(cols);
    (void)(*reader)->ReadRows((*reader)->rows() - 1, 1, absl::MakeSpan(row));
    if ((*reader)->is_integer()) {
      std::vector<int32_t> int_row(cols);
      (void)(*reader)->ReadIntRows(0, 1, absl::MakeSpan(int_row));
    }
  }
  std::remove(path.c_str());
  return 0;
}
