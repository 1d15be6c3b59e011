// Readers for the vector-dataset files that benchmarks and `shoal ingest` consume, all in one
// place:
//   .fvecs .bvecs .ivecs        each row = int32 dimension + that many float/uint8/int32 values
//   .fbin .u8bin .ibin          big-ann: uint32 rows, uint32 cols, then row-major float/uint8/int32
//   .npy                        NumPy 1.0/2.0/3.0, little-endian f4 f8 u1 i4 i8, C order, 1-D or
//   2-D idx (.gz or raw)            MNIST/Fashion-MNIST idx1/idx3-ubyte (big-endian header), gzip
//   ok .hdf5 / .h5                 ann-benchmarks layout (train, test, neighbors, distances,
//   `distance`)
//
//   SHOAL_ASSIGN_OR_RETURN(shoal::Matrix base, shoal::ReadVectors("sift_base.fvecs"));
//   SHOAL_ASSIGN_OR_RETURN(shoal::AnnDataset ds, shoal::LoadDataset("fashion-mnist"));
//
//   // Streaming: open once, read any row range without loading the whole file.
//   SHOAL_ASSIGN_OR_RETURN(auto reader, shoal::VectorReader::Open("base.u8bin"));
//   std::vector<float> batch(1000 * reader->cols());
//   SHOAL_RETURN_IF_ERROR(reader->ReadRows(0, 1000, absl::MakeSpan(batch)));
//
// The reader checks every size read from a file against the file's size before it allocates
// or reads (a gzip file's size bound is its compressed size times deflate's maximum ratio, and
// its rows are read in batches), so a corrupt header gives an error, never a huge allocation.
//
// Errors (the message names the file path and, for a bad byte, its offset; in a .gz file the
// offset is into the decompressed stream), e.g.
//   "t.fvecs: truncated record 17 at offset 2312: need 516 bytes, 200 left"
//   NotFound         the file does not exist
//   InvalidArgument  unknown extension or dataset spec, bad header (wrong magic, unsupported
//                    dtype, fortran_order, sizes that overflow or exceed the file), a dimension
//                    that changes between records, floats asked for as integers, a row range
//                    out of bounds
//   DataLoss         the file ends early (truncated record or data)
//   Internal         the OS or a library (zlib, HDF5) failed
//
// Thread safety: the free functions may be called concurrently (HDF5 calls are serialized
// inside). A VectorReader is not thread-safe: use one per thread.
#ifndef SHOAL_DATASET_H_
#define SHOAL_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shoal {

// A dense row-major matrix: row i is data[i * cols, (i + 1) * cols).
struct Matrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<float> data;
  const float* Row(size_t i) const { return data.data() + i * cols; }
};

struct IntMatrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<int32_t> data;
  const int32_t* Row(size_t i) const { return data.data() + i * cols; }
};

// Reads at most `max_rows` rows of a vector file, converting its elements to float. The format
// comes from the extension: .fvecs .bvecs .ivecs .fbin .u8bin .ibin .npy, and idx files
// (names ending in .gz, .idx, -ubyte).
absl::StatusOr<Matrix> ReadVectors(const std::string& path, size_t max_rows = SIZE_MAX);

// Same for integer files (.ivecs .ibin .bvecs .u8bin, integer .npy, idx): ground-truth ids,
// labels. Float files give InvalidArgument; int64 values outside int32 give InvalidArgument.
absl::StatusOr<IntMatrix> ReadIntVectors(const std::string& path, size_t max_rows = SIZE_MAX);

// Random access to the rows of one vector file (every format of ReadVectors). Open reads and
// checks the header only. Not thread-safe.
class VectorReader {
 public:
  static absl::StatusOr<std::unique_ptr<VectorReader>> Open(const std::string& path);

  virtual ~VectorReader() = default;
  virtual const std::string& path() const = 0;
  virtual size_t rows() const = 0;
  virtual size_t cols() const = 0;
  // True when the file stores integers (ReadIntRows works).
  virtual bool is_integer() const = 0;

  // Reads rows [first, first + count) into `out`, which must hold exactly count * cols()
  // values. InvalidArgument when the range exceeds rows() or `out` has the wrong size.
  virtual absl::Status ReadRows(size_t first, size_t count, absl::Span<float> out) = 0;
  virtual absl::Status ReadIntRows(size_t first, size_t count, absl::Span<int32_t> out) = 0;

 protected:
  VectorReader() = default;
};

// An ann-benchmarks style dataset: base vectors, queries and (when known) their true
// neighbours. `distance` is the metric name of the file ("euclidean", "angular", ...).
struct AnnDataset {
  std::string name;
  Matrix train;
  Matrix test;
  IntMatrix neighbors;  // test.rows x k ids into train; empty when unknown
  Matrix distances;     // same shape as neighbors; empty when unknown
  std::string distance = "euclidean";
};

// Reads an ann-benchmarks HDF5 file (datasets train, test; neighbors and distances optional;
// string attribute `distance`, "euclidean" when absent).
absl::StatusOr<AnnDataset> ReadAnnBenchmarksHdf5(const std::string& path);

// Loads a dataset named by `spec`:
//   "fashion-mnist"   Debian's dataset-fashion-mnist (60000 train, 10000 test, 784 dims,
//                     euclidean; neighbors empty). "fashion-mnist:DIR" reads DIR instead.
//   "PATH.hdf5"       an ann-benchmarks file (also .h5)
//   "synthetic:n=100000,d=128,q=1000,clusters=100,intrinsic=16,seed=1"   a seeded clustered
//                     Gaussian mixture, identical for identical specs on every machine (all keys
//                     optional; q queries drawn from the same mixture; neighbors empty;
//                     ",distance=angular" labels it for cosine search). Each cluster spreads
//                     along its own random `intrinsic`-dimensional subspace (plus a little
//                     isotropic noise), as real embeddings do; intrinsic=0 spreads it over all
//                     d dimensions (structureless inside a cluster).
absl::StatusOr<AnnDataset> LoadDataset(const std::string& spec);

}  // namespace shoal

#endif  // SHOAL_DATASET_H_
