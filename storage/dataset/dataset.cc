// Entry points of include/shoal/dataset.h: format dispatch, whole-file reads, LoadDataset.
#include "shoal/dataset.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/dataset/embedding_synthetic.h"
#include "storage/dataset/formats.h"
#include "storage/dataset/synthetic.h"

namespace shoal {
namespace {

using storage::ElementType;
using storage::FileFormat;

constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
// Whole-file reads go in batches of about this many bytes of output, so the result grows
// with the data actually read rather than with a header's claim.
constexpr size_t kBatchBytes = 8u << 20;

absl::StatusOr<storage::RowLayout> ParseLayout(FileFormat format, storage::ByteSource& source) {
  switch (format) {
    case FileFormat::kFvecs:
      return storage::ParseVecsLayout(source, ElementType::kFloat32);
    case FileFormat::kBvecs:
      return storage::ParseVecsLayout(source, ElementType::kUint8);
    case FileFormat::kIvecs:
      return storage::ParseVecsLayout(source, ElementType::kInt32);
    case FileFormat::kFbin:
      return storage::ParseBinLayout(source, ElementType::kFloat32);
    case FileFormat::kU8bin:
      return storage::ParseBinLayout(source, ElementType::kUint8);
    case FileFormat::kIbin:
      return storage::ParseBinLayout(source, ElementType::kInt32);
    case FileFormat::kNpy:
      return storage::ParseNpyLayout(source);
    case FileFormat::kIdx:
      return storage::ParseIdxLayout(source);
  }
  return absl::InternalError("unknown format");
}

template <typename T, typename ReadFn>
absl::Status ReadAll(VectorReader& reader, size_t max_rows, size_t* rows, std::vector<T>* data,
                     ReadFn read) {
  const size_t cols = reader.cols();
  *rows = std::min(reader.rows(), max_rows);
  const size_t batch = std::max<size_t>(1, kBatchBytes / sizeof(T) / std::max<size_t>(cols, 1));
  for (size_t done = 0; done < *rows;) {
    const size_t n = std::min(batch, *rows - done);
    data->resize((done + n) * cols);
    SHOAL_RETURN_IF_ERROR(read(done, n, absl::MakeSpan(data->data() + done * cols, n * cols)));
    done += n;
  }
  return absl::OkStatus();
}

absl::StatusOr<Matrix> ReadFashionMnistPart(const std::string& dir, const std::string& part) {
  return ReadVectors(absl::StrCat(dir, "/", part, "-images-idx3-ubyte.gz"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<VectorReader>> VectorReader::Open(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(FileFormat format, storage::FormatFromPath(path));
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<storage::ByteSource> source,
                         storage::ByteSource::Open(path));
  SHOAL_ASSIGN_OR_RETURN(storage::RowLayout layout, ParseLayout(format, *source));
  return storage::NewLayoutReader(std::move(source), layout);
}

absl::StatusOr<Matrix> ReadVectors(const std::string& path, size_t max_rows) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<VectorReader> reader, VectorReader::Open(path));
  Matrix m;
  m.cols = reader->cols();
  SHOAL_RETURN_IF_ERROR(ReadAll(*reader, max_rows, &m.rows, &m.data,
                                [&](size_t first, size_t n, absl::Span<float> out) {
                                  return reader->ReadRows(first, n, out);
                                }));
  return m;
}

absl::StatusOr<IntMatrix> ReadIntVectors(const std::string& path, size_t max_rows) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<VectorReader> reader, VectorReader::Open(path));
  if (!reader->is_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": holds floating-point values, not integers"));
  }
  IntMatrix m;
  m.cols = reader->cols();
  SHOAL_RETURN_IF_ERROR(ReadAll(*reader, max_rows, &m.rows, &m.data,
                                [&](size_t first, size_t n, absl::Span<int32_t> out) {
                                  return reader->ReadIntRows(first, n, out);
                                }));
  return m;
}

absl::StatusOr<AnnDataset> LoadDataset(const std::string& spec) {
  if (spec == "fashion-mnist" || absl::StartsWith(spec, "fashion-mnist:")) {
    const std::string dir =
        spec == "fashion-mnist" ? kFashionMnistDir : spec.substr(sizeof("fashion-mnist:") - 1);
    AnnDataset ds;
    ds.name = "fashion-mnist";
    SHOAL_ASSIGN_OR_RETURN(ds.train, ReadFashionMnistPart(dir, "train"));
    SHOAL_ASSIGN_OR_RETURN(ds.test, ReadFashionMnistPart(dir, "t10k"));
    return ds;
  }
  if (absl::StartsWith(spec, "embedding:") || spec == "embedding") {
    return storage::GenerateEmbeddingLike(spec);
  }
  if (absl::StartsWith(spec, "synthetic:") || spec == "synthetic") {
    return storage::GenerateSynthetic(spec);
  }
  if (absl::EndsWith(spec, ".hdf5") || absl::EndsWith(spec, ".h5")) {
    return ReadAnnBenchmarksHdf5(spec);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dataset '", spec,
      "' (want fashion-mnist[:DIR], PATH.hdf5, synthetic:n=..,d=..,q=..,clusters=..,seed=.. or "
      "embedding:n=..,d=..,distance=..)"));
}

}  // namespace shoal
