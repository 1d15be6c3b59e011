// PostingQuantizer: compact codes of posting entries, relative to their posting's centroid,
// with squared-L2 estimates that come with an error bound. The SSD index keeps the codes in RAM,
// scans them, and reads a full vector from the vector file only for a candidate whose lower bound
// can still enter the top-k.
//
//   auto q = MakeQuantizer("sq8", dim, seed);          // or "rabitq:bits=2"
//   q->Train(sample, n);
//   q->Encode(x, centroid, code);                       // code_bytes() bytes
//   q->Prepare(query, pq); q->Prepare(centroid, pc);   // prepared_dim() floats each
//   q->Pack(&posting);                                  // the form kept in RAM and scanned
//   q->Estimate(pq, pc, posting, est, err);             // |query - x|^2 in [est - err, est + err]
//   q->Bounds(pq, pc, posting, lower, upper);           // the same as [lower, upper]
//
// Tiers:
//   sq8        per-dimension 8-bit scalar quantization of the residual x - c with ranges trained
//              on a sample; each code also stores the exact norm of its own quantization error
//              e = |r - r^| so the bound is rigorous: |q - x| lies in |q - x^| +- e (triangle
//              inequality), squared.
//   rabitq     RaBitQ / extended RaBitQ (index/quantization/rabitq.h), bound with the paper's
//   confidence.
// Thread safety: immutable after Train (or Deserialize); Encode and Estimate are const and
// thread-safe.
#ifndef SHOAL_INDEX_QUANTIZATION_QUANTIZER_H_
#define SHOAL_INDEX_QUANTIZATION_QUANTIZER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "index/postings/posting_entries.h"

namespace shoal::index {

class PostingQuantizer {
 public:
  virtual ~PostingQuantizer() = default;
  // The spec value it was made from ("sq8", "rabitq:bits=2").
  virtual std::string name() const = 0;
  virtual size_t dim() const = 0;
  virtual size_t code_bytes() const = 0;
  // Learns what it needs from `n` residual-like sample rows (vectors minus their centroids).
  virtual void Train(const float* residuals, size_t n) = 0;
  virtual void Encode(const float* x, const float* centroid, uint8_t* code) const = 0;
  // A query and each posting centroid are put once into the form the estimates start from
  // (prepared_dim() floats): RaBitQ rotates them, so a query costs one rotation instead of one
  // per posting it scans. The default form is the vector itself.
  virtual size_t prepared_dim() const { return dim(); }
  virtual void Prepare(const float* v, float* out) const;
  // False when Prepare is the identity (the index then uses its centroids as they are).
  virtual bool prepares() const { return false; }
  // Puts a posting's codes into the form the index keeps in RAM and scans (RaBitQ: 32-code
  // fast-scan blocks), and back; both are no-ops for a tier without one and when already done.
  virtual void Pack(QuantizedPosting* posting) const {}
  // Bytes of n codes in that form.
  virtual size_t PackedBytes(size_t n) const { return n * code_bytes(); }
  virtual void Unpack(QuantizedPosting* posting) const {}
  // For every code of one posting (packed or not): the squared-L2 estimate of |query - x|^2
  // and a bound on its error, from the prepared query and the prepared posting centroid.
  virtual void Estimate(const float* prepared_query, const float* prepared_centroid,
                        const QuantizedPosting& posting, float* estimate, float* error) const = 0;
  // The same as each code's interval: lower[i] = estimate - error, upper[i] = estimate + error
  // (float), what the index's scan works on. A tier may write it without the two arrays between.
  virtual void Bounds(const float* prepared_query, const float* prepared_centroid,
                      const QuantizedPosting& posting, float* lower, float* upper) const;
  virtual std::string Serialize() const = 0;
};

// InvalidArgument naming `spec.quant` for an unknown tier or bad bits.
absl::StatusOr<std::unique_ptr<PostingQuantizer>> MakeQuantizer(const std::string& spec, size_t dim,
                                                                uint64_t seed);
// DataLoss naming `where` when corrupt.
absl::StatusOr<std::unique_ptr<PostingQuantizer>> DeserializeQuantizer(const std::string& bytes,
                                                                       const std::string& where);

// The RaBitQ tier (rabitq_quantizer.cc); MakeQuantizer / DeserializeQuantizer dispatch to them.
absl::StatusOr<std::unique_ptr<PostingQuantizer>> MakeRabitqQuantizer(const std::string& spec,
                                                                      size_t dim, uint64_t seed);
absl::StatusOr<std::unique_ptr<PostingQuantizer>> DeserializeRabitqQuantizer(
    const std::string& bytes, const std::string& where);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_QUANTIZATION_QUANTIZER_H_
