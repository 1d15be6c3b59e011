// The one adapter between shoal_bench and FAISS: builds an index from a factory string
// ("Flat", "IVF1024,Flat", "HNSW32", ...), adds and searches vectors, and turns FAISS's
// exceptions into absl::Status. Distances follow Shoal's conventions (types.h) so results of
// the two systems compare directly: kL2 squared L2; kInnerProduct -<q,x>; kCosine 1 - cos
// (vectors and queries are normalised here, FAISS searches inner product).
//
//   SHOAL_ASSIGN_OR_RETURN(auto index, FaissIndex::Create("Flat", 784, Metric::kL2));
//   SHOAL_RETURN_IF_ERROR(index->Add(base.data, base.rows));
//   SHOAL_RETURN_IF_ERROR(index->Search(queries.Row(0), nq, 10, &neighbors, 0));
//
// Thread safety: Search may run concurrently with Search; Add/Train exclusively.
// FAISS's thread count is OpenMP's plus OpenBLAS's pool: SetThreads sets both.
#ifndef SHOAL_BENCH_FAISS_INDEX_H_
#define SHOAL_BENCH_FAISS_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/recall.h"
#include "bench/sweep.h"
#include "shoal/types.h"

namespace faiss {
struct Index;
struct SearchParameters;
}  // namespace faiss

namespace shoal::bench {

class FaissIndex {
 public:
  // InvalidArgument for a factory string FAISS rejects.
  static absl::StatusOr<std::unique_ptr<FaissIndex>> Create(const std::string& factory, size_t dim,
                                                            Metric metric);
  ~FaissIndex();

  static void SetThreads(int threads);

  absl::Status Train(const float* data, size_t n);
  absl::Status Add(const float* data, size_t n);
  // Writes queries [0, n) into rows [first, first + n) of `out` (out->k >= k).
  absl::Status Search(const float* queries, size_t n, size_t k, Neighbors* out, size_t first);

  // One query among the ids whose bit is set in `bitmap` (bit i of byte i / 8, size() bits): a
  // faiss::IDSelectorBitmap in the search's parameters, with the efSearch or nprobe set last.
  // (HNSW and IVF check it as they visit, so the filter narrows the answers, not the walk.)
  absl::Status SearchAmong(const float* query, size_t k, const uint8_t* bitmap, Neighbors* out,
                           size_t row);

  // Sets a search-time parameter by its faiss::ParameterSpace name ("nprobe", "efSearch",
  // "k_factor", ...), or HNSW's "efConstruction" (before Add); InvalidArgument when the index
  // has no such parameter. Not concurrent with Search.
  absl::Status SetParameter(const std::string& name, double value);
  // SetParameter for each of a sweep's (name, value), in order; the first error.
  absl::Status SetParameters(const GridPoint& point);

  size_t size() const;
  // Bytes of the vectors the index stores (codes), as FAISS reports them via sa_code_size.
  size_t CodeBytes() const;
  // RAM of the index's data, by part. Allocator slack and per-query scratch are not counted.
  struct Ram {
    size_t lists = 0;      // IVF inverted lists: codes (fast-scan: padded blocks) + 8-byte ids;
                           // non-IVF indexes: sa_code_size() * ntotal
    size_t centroids = 0;  // IVF coarse quantizer's vectors
    size_t tables = 0;     // IVF-PQ's precomputed residual tables (nlist * m * 2^nbits floats)
    size_t refine = 0;     // a refine index's stored vectors (IndexRefineFlat: all, float32)
    size_t graph = 0;      // HNSW's neighbour lists, offsets and levels
    size_t total() const { return lists + centroids + tables + refine + graph; }
  };
  Ram RamParts() const;
  size_t RamBytes() const { return RamParts().total(); }

  // Full-precision vectors a refine index re-ranks per query of k results: k * k_factor (an
  // upper bound: fewer when the base index finds fewer candidates); 0 without refine.
  size_t RefineReadsPerQuery(size_t k) const;
  bool has_refine() const;
  const std::string& factory() const { return factory_; }

 private:
  FaissIndex(std::unique_ptr<faiss::Index> index, std::string factory, size_t dim, Metric metric);
  const float* Prepare(const float* data, size_t n, std::vector<float>* scratch) const;
  absl::Status SearchWith(const float* queries, size_t n, size_t k,
                          const faiss::SearchParameters* params, Neighbors* out, size_t first);

  std::unique_ptr<faiss::Index> index_;
  std::string factory_;
  size_t dim_;
  Metric metric_;
};

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_FAISS_INDEX_H_
