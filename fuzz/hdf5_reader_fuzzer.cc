// Fuzzes the ann-benchmarks HDF5 reader (include/shoal/dataset.h) on a file holding the input:
// ReadAnnBenchmarksHdf5, ReadVectors and VectorReader must reject bad files, never crash.
// Kept apart from dataset_reader_fuzzer because the HDF5 library under it is not instrumented:
// what it finds may be the library's to fix, and it must not stop the other readers' runs.
//
// SHOAL_FUZZ_WRITE_SEEDS=DIR: write a small valid ann-benchmarks file to DIR and exit (the seed
// corpus in fuzz/corpus/hdf5_reader_fuzzer/ was made so).
#include <hdf5.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/dataset.h"

namespace {

void WriteMatrix(hid_t file, const char* name, hid_t type, hsize_t rows, hsize_t cols,
                 const void* data) {
  hsize_t dims[2] = {rows, cols};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (dataset < 0 || H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    std::abort();
  }
  H5Dclose(dataset);
  H5Sclose(space);
}

void WriteSeed(const std::string& path) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) std::abort();
  const char* distance = "angular";
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, "distance", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, &distance);
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Tclose(type);
  std::vector<float> train(8 * 4), test(2 * 4), distances(2 * 3);
  std::vector<int32_t> neighbors(2 * 3);
  for (size_t i = 0; i < train.size(); ++i) train[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < test.size(); ++i) test[i] = static_cast<float>(i % 5) + 0.5f;
  for (size_t i = 0; i < neighbors.size(); ++i) neighbors[i] = static_cast<int32_t>(i % 8);
  WriteMatrix(file, "train", H5T_NATIVE_FLOAT, 8, 4, train.data());
  WriteMatrix(file, "test", H5T_NATIVE_FLOAT, 2, 4, test.data());
  WriteMatrix(file, "neighbors", H5T_NATIVE_INT32, 2, 3, neighbors.data());
  WriteMatrix(file, "distances", H5T_NATIVE_FLOAT, 2, 3, distances.data());
  H5Fclose(file);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // no error stack printed per bad input
  if (const char* dir = std::getenv("SHOAL_FUZZ_WRITE_SEEDS")) {
    WriteSeed(std::string(dir) + "/ann.hdf5");
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "/tmp/shoal_hdf5_fuzz_" + std::to_string(getpid()) + ".hdf5";
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  (void)shoal::ReadAnnBenchmarksHdf5(path);
  (void)shoal::ReadVectors(path, 64);
  auto reader = shoal::VectorReader::Open(path);
  if (reader.ok() && (*reader)->rows() > 0 && (*reader)->cols() <= (1u << 16)) {
    std::vector<float> row((*reader)->cols());
    (void)(*reader)->ReadRows((*reader)->rows() - 1, 1, absl::MakeSpan(row));
  }
  std::remove(path.c_str());
  return 0;
}
