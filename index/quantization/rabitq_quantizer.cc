// RabitqQuantizer: the RaBitQ tier of PostingQuantizer (quantizer.h) over index/rabitq.h.
// Spec: "rabitq" or "rabitq:bits=B" (B in 1..8). The bound uses eps0 = RaBitQ::kEps0For999, so it
// holds for >= 99.9% of pairs (rabitq_test measures it): a true neighbour is dropped from the
// rerank only when its own estimate misses by more than that.
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "index/quantization/quantizer.h"
#include "index/quantization/rabitq.h"

namespace shoal::index {
namespace {

constexpr char kMagic[] = "shoal-rabitq-q1";

class RabitqQuantizer final : public PostingQuantizer {
 public:
  explicit RabitqQuantizer(RaBitQ rq) : rq_(std::move(rq)) {}
  std::string name() const override { return absl::StrCat("rabitq:bits=", rq_.bits()); }
  size_t dim() const override { return rq_.dim(); }
  size_t code_bytes() const override { return rq_.code_bytes(); }
  void Train(const float*, size_t) override {}  // data-oblivious: a seeded rotation
  void Encode(const float* x, const float* centroid, uint8_t* code) const override {
    rq_.Encode(x, centroid, code);
  }
  // The rotated vector: P (q - c) = P q - P c, one rotation per query and per centroid.
  size_t prepared_dim() const override { return rq_.padded_dim(); }
  void Prepare(const float* v, float* out) const override { rq_.rotation().Apply(v, out); }
  bool prepares() const override { return true; }
  size_t PackedBytes(size_t n) const override { return rq_.PackedBytes(n); }
  void Pack(QuantizedPosting* p) const override {
    if (p->packed) return;
    base::AlignedVector<uint8_t> packed(rq_.PackedBytes(p->size()));
    rq_.Pack(p->codes.data(), p->size(), packed.data());
    p->codes = std::move(packed);
    p->packed = true;
  }
  void Unpack(QuantizedPosting* p) const override {
    if (!p->packed) return;
    base::AlignedVector<uint8_t> codes(p->size() * rq_.code_bytes());
    rq_.Unpack(p->codes.data(), p->size(), codes.data());
    p->codes = std::move(codes);
    p->packed = false;
  }
  void Estimate(const float* rotated_query, const float* rotated_centroid,
                const QuantizedPosting& p, float* estimate, float* error) const override {
    thread_local RaBitQ::Query q;
    thread_local std::vector<RaBitQ::Estimate> out;
    rq_.PrepareRotated(rotated_query, rotated_centroid, &q);
    const size_t n = p.size();
    out.resize(n);
    if (p.packed) {
      rq_.EstimatePacked(q, p.codes.data(), n, out.data());
    } else {
      rq_.EstimateBatch(q, p.codes.data(), n, out.data());
    }
    for (size_t i = 0; i < n; ++i) {
      estimate[i] = out[i].distance;
      error[i] = out[i].error;
    }
  }
  void Bounds(const float* rotated_query, const float* rotated_centroid, const QuantizedPosting& p,
              float* lower, float* upper) const override {
    if (!p.packed) {
      PostingQuantizer::Bounds(rotated_query, rotated_centroid, p, lower, upper);
      return;
    }
    thread_local RaBitQ::Query q;
    rq_.PrepareRotated(rotated_query, rotated_centroid, &q);
    rq_.EstimatePackedBounds(q, p.codes.data(), p.size(), lower, upper);
  }
  std::string Serialize() const override { return std::string(kMagic) + rq_.Serialize(); }

 private:
  RaBitQ rq_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PostingQuantizer>> MakeRabitqQuantizer(const std::string& spec,
                                                                      size_t dim, uint64_t seed) {
  uint32_t bits = 1;
  if (spec != "rabitq") {
    const std::string prefix = "rabitq:bits=";
    if (spec.rfind(prefix, 0) != 0 || !absl::SimpleAtoi(spec.substr(prefix.size()), &bits) ||
        bits < 1 || bits > RaBitQ::kMaxBits) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.quant: '", spec, "' (expected rabitq:bits=B with B in 1..8)"));
    }
  }
  auto rq = RaBitQ::Create(dim, bits, seed, RaBitQ::kEps0For999);
  if (!rq.ok()) return rq.status();
  return std::unique_ptr<PostingQuantizer>(new RabitqQuantizer(*std::move(rq)));
}

absl::StatusOr<std::unique_ptr<PostingQuantizer>> DeserializeRabitqQuantizer(
    const std::string& bytes, const std::string& where) {
  if (bytes.rfind(kMagic, 0) != 0) {
    return absl::DataLossError(absl::StrCat(where, ": not a RaBitQ quantizer"));
  }
  auto rq = RaBitQ::Deserialize(std::string_view(bytes).substr(sizeof(kMagic) - 1), where);
  if (!rq.ok()) return rq.status();
  return std::unique_ptr<PostingQuantizer>(new RabitqQuantizer(*std::move(rq)));
}

}  // namespace shoal::index
