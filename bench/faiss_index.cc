#include "bench/faiss_index.h"

#include <faiss/AutoTune.h>
#include <faiss/Index.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexIVFPQFastScan.h>
#include <faiss/IndexRefine.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/index_factory.h>
#include <faiss/invlists/BlockInvertedLists.h>
#include <omp.h>

#include <cmath>
#include <exception>
#include <functional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/blas_env.h"

namespace shoal::bench {
namespace {

// Runs `body`, converting anything FAISS throws (FaissException derives from std::exception).
absl::Status Guard(const char* what, const std::function<void()>& body) {
  try {
    body();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("faiss ", what, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat("faiss ", what, ": unknown exception"));
  }
}

void NormalizeRows(const float* in, size_t n, size_t dim, float* out) {
  for (size_t i = 0; i < n; ++i) {
    double norm = 0;
    for (size_t j = 0; j < dim; ++j) norm += double{in[i * dim + j]} * in[i * dim + j];
    const float scale = norm > 0 ? static_cast<float>(1 / std::sqrt(norm)) : 0.0f;
    for (size_t j = 0; j < dim; ++j) out[i * dim + j] = in[i * dim + j] * scale;
  }
}

}  // namespace

FaissIndex::FaissIndex(std::unique_ptr<faiss::Index> index, std::string factory, size_t dim,
                       Metric metric)
    : index_(std::move(index)), factory_(std::move(factory)), dim_(dim), metric_(metric) {}

FaissIndex::~FaissIndex() = default;

absl::StatusOr<std::unique_ptr<FaissIndex>> FaissIndex::Create(const std::string& factory,
                                                               size_t dim, Metric metric) {
  const faiss::MetricType faiss_metric =
      metric == Metric::kL2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
  std::unique_ptr<faiss::Index> index;
  absl::Status status = Guard("index_factory", [&] {
    index.reset(faiss::index_factory(static_cast<int>(dim), factory.c_str(), faiss_metric));
  });
  if (!status.ok()) return absl::InvalidArgumentError(status.message());
  return std::unique_ptr<FaissIndex>(new FaissIndex(std::move(index), factory, dim, metric));
}

void FaissIndex::SetThreads(int threads) {
  omp_set_num_threads(threads);
  SetBlasThreads(threads);  // FAISS's flat search runs sgemm on OpenBLAS's own pool
}

const float* FaissIndex::Prepare(const float* data, size_t n, std::vector<float>* scratch) const {
  if (metric_ != Metric::kCosine) return data;
  scratch->resize(n * dim_);
  NormalizeRows(data, n, dim_, scratch->data());
  return scratch->data();
}

absl::Status FaissIndex::Train(const float* data, size_t n) {
  std::vector<float> scratch;
  const float* x = Prepare(data, n, &scratch);
  return Guard("train", [&] { index_->train(static_cast<int64_t>(n), x); });
}

absl::Status FaissIndex::Add(const float* data, size_t n) {
  std::vector<float> scratch;
  const float* x = Prepare(data, n, &scratch);
  return Guard("add", [&] { index_->add(static_cast<int64_t>(n), x); });
}

absl::Status FaissIndex::Search(const float* queries, size_t n, size_t k, Neighbors* out,
                                size_t first) {
  return SearchWith(queries, n, k, nullptr, out, first);
}

absl::Status FaissIndex::SearchAmong(const float* query, size_t k, const uint8_t* bitmap,
                                     Neighbors* out, size_t row) {
  faiss::IDSelectorBitmap selector(static_cast<size_t>(index_->ntotal), bitmap);
  // Parameters passed with a search replace the index's own: carry over what SetParameter set.
  if (const auto* hnsw = dynamic_cast<const faiss::IndexHNSW*>(index_.get())) {
    faiss::SearchParametersHNSW params;
    params.efSearch = hnsw->hnsw.efSearch;
    params.sel = &selector;
    return SearchWith(query, 1, k, &params, out, row);
  }
  if (const auto* ivf = dynamic_cast<const faiss::IndexIVF*>(index_.get())) {
    faiss::SearchParametersIVF params;
    params.nprobe = ivf->nprobe;
    params.sel = &selector;
    return SearchWith(query, 1, k, &params, out, row);
  }
  faiss::SearchParameters params;
  params.sel = &selector;
  return SearchWith(query, 1, k, &params, out, row);
}

absl::Status FaissIndex::SearchWith(const float* queries, size_t n, size_t k,
                                    const faiss::SearchParameters* params, Neighbors* out,
                                    size_t first) {
  if (out->k < k || first + n > out->nq) {
    return absl::InvalidArgumentError("FaissIndex::Search: output too small");
  }
  std::vector<float> scratch;
  const float* q = Prepare(queries, n, &scratch);
  std::vector<float> distances(n * k);
  std::vector<int64_t> labels(n * k);
  SHOAL_RETURN_IF_ERROR(Guard("search", [&] {
    index_->search(static_cast<int64_t>(n), q, static_cast<int64_t>(k), distances.data(),
                   labels.data(), params);
  }));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < k; ++j) {
      float d = distances[i * k + j];
      if (metric_ == Metric::kInnerProduct) d = -d;
      if (metric_ == Metric::kCosine) d = 1 - d;
      out->Ids(first + i)[j] = labels[i * k + j];
      out->Distances(first + i)[j] = d;
    }
  }
  return absl::OkStatus();
}

absl::Status FaissIndex::SetParameters(const GridPoint& point) {
  for (const auto& [name, value] : point) SHOAL_RETURN_IF_ERROR(SetParameter(name, value));
  return absl::OkStatus();
}

absl::Status FaissIndex::SetParameter(const std::string& name, double value) {
  if (auto* hnsw = dynamic_cast<faiss::IndexHNSW*>(index_.get());
      hnsw && name == "efConstruction") {
    hnsw->hnsw.efConstruction = static_cast<int>(value);  // not a ParameterSpace name
    return absl::OkStatus();
  }
  absl::Status status = Guard("set_index_parameter", [&] {
    faiss::ParameterSpace().set_index_parameter(index_.get(), name, value);
  });
  if (!status.ok()) return absl::InvalidArgumentError(status.message());
  return absl::OkStatus();
}

namespace {

void AddRam(const faiss::Index* index, FaissIndex::Ram* ram) {
  if (const auto* refine = dynamic_cast<const faiss::IndexRefine*>(index)) {
    AddRam(refine->base_index, ram);
    FaissIndex::Ram inner;
    AddRam(refine->refine_index, &inner);
    ram->refine += inner.total();
    return;
  }
  if (const auto* hnsw = dynamic_cast<const faiss::IndexHNSW*>(index)) {
    const faiss::HNSW& g = hnsw->hnsw;
    ram->graph += g.neighbors.size() * sizeof(g.neighbors[0]) +
                  g.offsets.size() * sizeof(g.offsets[0]) + g.levels.size() * sizeof(g.levels[0]);
    if (hnsw->storage != nullptr) AddRam(hnsw->storage, ram);
    return;
  }
  const auto* ivf = dynamic_cast<const faiss::IndexIVF*>(index);
  if (ivf == nullptr) {
    ram->lists += index->sa_code_size() * static_cast<size_t>(index->ntotal);
    return;
  }
  if (ivf->quantizer != nullptr) {
    FaissIndex::Ram coarse;
    AddRam(ivf->quantizer, &coarse);
    ram->centroids += coarse.total();
  }
  const auto* blocks = dynamic_cast<const faiss::BlockInvertedLists*>(ivf->invlists);
  for (size_t list = 0; list < ivf->nlist; ++list) {
    const size_t n = ivf->invlists->list_size(list);
    // Fast-scan lists hold whole blocks of n_per_block codes.
    ram->lists += blocks != nullptr ? blocks->codes[list].size() : n * ivf->code_size;
    ram->lists += n * sizeof(faiss::Index::idx_t);
  }
  if (const auto* pq = dynamic_cast<const faiss::IndexIVFPQ*>(index)) {
    ram->tables += pq->precomputed_table.size() * sizeof(float);
  }
  if (const auto* fs = dynamic_cast<const faiss::IndexIVFPQFastScan*>(index)) {
    ram->tables += fs->precomputed_table.size() * sizeof(float);
  }
}

}  // namespace

FaissIndex::Ram FaissIndex::RamParts() const {
  Ram ram;
  if (!Guard("ram_bytes", [&] { AddRam(index_.get(), &ram); }).ok()) return Ram();
  return ram;
}

bool FaissIndex::has_refine() const {
  return dynamic_cast<const faiss::IndexRefine*>(index_.get()) != nullptr;
}

size_t FaissIndex::RefineReadsPerQuery(size_t k) const {
  const auto* refine = dynamic_cast<const faiss::IndexRefine*>(index_.get());
  // IndexRefine::search asks its base index for k * k_factor (truncated) candidates.
  return refine == nullptr ? 0 : static_cast<size_t>(static_cast<double>(k) * refine->k_factor);
}

size_t FaissIndex::size() const { return static_cast<size_t>(index_->ntotal); }

size_t FaissIndex::CodeBytes() const {
  size_t code_size = 0;
  if (!Guard("sa_code_size", [&] { code_size = index_->sa_code_size(); }).ok()) return 0;
  return code_size * size();
}

}  // namespace shoal::bench
