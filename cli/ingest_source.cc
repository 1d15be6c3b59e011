#include "cli/ingest_source.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/dataset.h"

namespace shoal::cli {
namespace {

// What the readers would pick for `path` (see include/shoal/dataset.h).
std::string FormatOf(const std::string& path) {
  std::string name = path;
  if (absl::EndsWith(name, ".gz")) name.resize(name.size() - 3);
  for (const char* ext : {"fvecs", "bvecs", "ivecs", "fbin", "u8bin", "ibin", "npy", "hdf5"}) {
    if (absl::EndsWith(name, absl::StrCat(".", ext))) return ext;
  }
  if (absl::EndsWith(name, ".h5")) return "hdf5";
  if (absl::EndsWith(name, ".idx") || absl::EndsWith(name, "-ubyte")) return "idx";
  return "";
}

class ReaderSource final : public RowSource {
 public:
  explicit ReaderSource(std::unique_ptr<VectorReader> reader) : reader_(std::move(reader)) {}
  const std::string& path() const override { return reader_->path(); }
  size_t rows() const override { return reader_->rows(); }
  size_t cols() const override { return reader_->cols(); }
  absl::Status ReadRows(size_t first, size_t count, absl::Span<float> out) override {
    return reader_->ReadRows(first, count, out);
  }

 private:
  std::unique_ptr<VectorReader> reader_;
};

// ann-benchmarks files are at most a few GB of train vectors; they are read whole.
class MatrixSource final : public RowSource {
 public:
  MatrixSource(std::string path, Matrix matrix) : path_(std::move(path)), m_(std::move(matrix)) {}
  const std::string& path() const override { return path_; }
  size_t rows() const override { return m_.rows; }
  size_t cols() const override { return m_.cols; }
  absl::Status ReadRows(size_t first, size_t count, absl::Span<float> out) override {
    if (first + count > m_.rows || out.size() != count * m_.cols) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": rows [", first, ", ", first + count,
                                                     ") out of range (", m_.rows, " rows)"));
    }
    std::memcpy(out.data(), m_.Row(first), out.size() * sizeof(float));
    return absl::OkStatus();
  }

 private:
  std::string path_;
  Matrix m_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RowSource>> OpenRowSource(const std::string& path,
                                                         const std::string& format) {
  const std::string detected = FormatOf(path);
  if (format != "auto" && format != detected) {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: ", format, " does not match the name of ", path,
                     detected.empty() ? " (no known extension)" : " (looks like " + detected + ")",
                     "; rename the file to the format's extension"));
  }
  if (detected == "hdf5") {
    absl::StatusOr<AnnDataset> dataset = ReadAnnBenchmarksHdf5(path);
    if (!dataset.ok()) return dataset.status();
    if (dataset->train.rows == 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the `train` dataset is empty"));
    }
    return std::make_unique<MatrixSource>(path, std::move(dataset->train));
  }
  absl::StatusOr<std::unique_ptr<VectorReader>> reader = VectorReader::Open(path);
  if (!reader.ok()) return reader.status();
  return std::make_unique<ReaderSource>(std::move(*reader));
}

}  // namespace shoal::cli
