// ann-benchmarks HDF5 reader (HDF5 C API). Debian's serial libhdf5 is not thread-safe, so every
// HDF5 call runs under one process-wide mutex.
#include <hdf5.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "shoal/dataset.h"

namespace shoal {
namespace {

// Deflate's maximum ratio: a filtered dataset cannot unpack to more than this per stored byte.
constexpr uint64_t kMaxDeflateRatio = 1032;

absl::Mutex hdf5_mutex(absl::kConstInit);

// Closes an HDF5 handle on scope exit.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct Hdf5File {
  std::string path;
  uint64_t size = 0;
  hid_t id = -1;
};

// The innermost message on HDF5's error stack, e.g. "truncated file: eof = 800, ...".
std::string Hdf5ErrorText() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
        return 0;
      },
      &text);
  return text.empty() ? "no HDF5 detail" : text;
}

// Opens dataset `name` of rank 1 or 2, checks its size against the file, and reads it as
// `mem_type` into `*data` (rows x cols). Absent datasets are NotFound.
template <typename T>
absl::Status ReadDataset(const Hdf5File& file, const char* name, hid_t mem_type, size_t* rows,
                         size_t* cols, std::vector<T>* data) {
  if (H5Lexists(file.id, name, H5P_DEFAULT) <= 0) {
    return absl::NotFoundError(absl::StrCat(file.path, ": no dataset '", name, "'"));
  }
  Handle dataset(H5Dopen2(file.id, name, H5P_DEFAULT), H5Dclose);
  Handle space(dataset.ok() ? H5Dget_space(dataset.get()) : -1, H5Sclose);
  Handle type(dataset.ok() ? H5Dget_type(dataset.get()) : -1, H5Tclose);
  const std::string what = absl::StrCat(file.path, ": dataset '", name, "'");
  if (!space.ok() || !type.ok()) return absl::DataLossError(absl::StrCat(what, " unreadable"));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  hsize_t dims[2] = {0, 1};
  if (rank < 1 || rank > 2 || H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has rank ", rank, ", want 1 or 2"));
  }
  const H5T_class_t type_class = H5Tget_class(type.get());
  if (type_class != H5T_FLOAT && type_class != H5T_INTEGER) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not numeric"));
  }
  uint64_t elements = 0, bytes = 0;
  const haddr_t offset = H5Dget_offset(dataset.get());
  const std::string at = offset == HADDR_UNDEF ? "" : absl::StrCat(" at offset ", offset);
  if (__builtin_mul_overflow(uint64_t{dims[0]}, uint64_t{dims[1]}, &elements) ||
      __builtin_mul_overflow(elements, uint64_t{H5Tget_size(type.get())}, &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, at, ": shape overflows"));
  }
  const uint64_t stored = H5Dget_storage_size(dataset.get());
  if (bytes > 0 && (stored == 0 || bytes / kMaxDeflateRatio > stored)) {
    return absl::DataLossError(absl::StrCat(what, at, ": shape ", dims[0], " x ", dims[1],
                                            " needs ", bytes, " bytes, ", stored, " stored"));
  }
  if (offset != HADDR_UNDEF && (offset > file.size || stored > file.size - offset)) {
    return absl::DataLossError(absl::StrCat(what, ": truncated data at offset ", offset, ": need ",
                                            stored, " bytes, ",
                                            offset > file.size ? 0 : file.size - offset, " left"));
  }
  *rows = dims[0];
  *cols = dims[1];
  data->resize(elements);
  if (elements > 0 &&
      H5Dread(dataset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data->data()) < 0) {
    return absl::DataLossError(absl::StrCat(what, at, ": H5Dread failed: ", Hdf5ErrorText()));
  }
  return absl::OkStatus();
}

// The root attribute `distance` (fixed or variable-length string); "euclidean" if absent.
absl::StatusOr<std::string> ReadDistance(const Hdf5File& file) {
  if (H5Aexists(file.id, "distance") <= 0) return std::string("euclidean");
  Handle attr(H5Aopen(file.id, "distance", H5P_DEFAULT), H5Aclose);
  Handle type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path, ": attribute 'distance' is not a string"));
  }
  Handle mem_type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(mem_type.get(), H5T_VARIABLE);
    H5Tset_cset(mem_type.get(), H5Tget_cset(type.get()));
    char* value = nullptr;
    if (H5Aread(attr.get(), mem_type.get(), &value) < 0 || value == nullptr) {
      return absl::DataLossError(absl::StrCat(file.path, ": attribute 'distance' unreadable"));
    }
    std::string result(value);
    H5free_memory(value);
    return result;
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0 || size > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path, ": attribute 'distance' has absurd size ", size));
  }
  H5Tset_size(mem_type.get(), size);
  std::string value(size, '\0');
  if (H5Aread(attr.get(), mem_type.get(), value.data()) < 0) {
    return absl::DataLossError(absl::StrCat(file.path, ": attribute 'distance' unreadable"));
  }
  value.resize(strnlen(value.data(), size));
  return value;
}

absl::Status ReadOptional(absl::Status status) {
  return absl::IsNotFound(status) ? absl::OkStatus() : status;
}

}  // namespace

absl::StatusOr<AnnDataset> ReadAnnBenchmarksHdf5(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::string message = absl::StrCat(path, ": ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
  }
  absl::MutexLock lock(&hdf5_mutex);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become Status, not stderr noise
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an HDF5 file (no superblock signature at offset 0)"));
  }
  Handle file_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file_id.ok()) {
    return absl::DataLossError(absl::StrCat(path,
                                            ": corrupt or truncated HDF5 file ending at offset ",
                                            st.st_size, ": ", Hdf5ErrorText()));
  }
  Hdf5File file{path, static_cast<uint64_t>(st.st_size), file_id.get()};
  AnnDataset ds;
  ds.name = path.substr(path.find_last_of('/') + 1);
  SHOAL_ASSIGN_OR_RETURN(ds.distance, ReadDistance(file));
  SHOAL_RETURN_IF_ERROR(
      ReadDataset(file, "train", H5T_NATIVE_FLOAT, &ds.train.rows, &ds.train.cols, &ds.train.data));
  SHOAL_RETURN_IF_ERROR(
      ReadDataset(file, "test", H5T_NATIVE_FLOAT, &ds.test.rows, &ds.test.cols, &ds.test.data));
  SHOAL_RETURN_IF_ERROR(
      ReadOptional(ReadDataset(file, "neighbors", H5T_NATIVE_INT32, &ds.neighbors.rows,
                               &ds.neighbors.cols, &ds.neighbors.data)));
  SHOAL_RETURN_IF_ERROR(
      ReadOptional(ReadDataset(file, "distances", H5T_NATIVE_FLOAT, &ds.distances.rows,
                               &ds.distances.cols, &ds.distances.data)));
  if (ds.train.cols != ds.test.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": train has ", ds.train.cols, " dims but test has ", ds.test.cols));
  }
  return ds;
}

}  // namespace shoal
