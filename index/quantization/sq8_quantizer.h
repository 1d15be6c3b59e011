// Sq8Quantizer: the simple tier of PostingQuantizer (see quantizer.h).
// Code layout: dim bytes (the quantized residual) | f32 error norm.
#ifndef SHOAL_INDEX_QUANTIZATION_SQ8_QUANTIZER_H_
#define SHOAL_INDEX_QUANTIZATION_SQ8_QUANTIZER_H_

#include <vector>

#include "index/quantization/quantizer.h"

namespace shoal::index {

class Sq8Quantizer final : public PostingQuantizer {
 public:
  explicit Sq8Quantizer(size_t dim);
  std::string name() const override { return "sq8"; }
  size_t dim() const override { return dim_; }
  size_t code_bytes() const override { return dim_ + sizeof(float); }
  void Train(const float* residuals, size_t n) override;
  void Encode(const float* x, const float* centroid, uint8_t* code) const override;
  void Estimate(const float* query, const float* centroid, const QuantizedPosting& posting,
                float* estimate, float* error) const override;
  std::string Serialize() const override;
  static absl::StatusOr<std::unique_ptr<Sq8Quantizer>> Deserialize(const std::string& bytes,
                                                                   const std::string& where);

 private:
  size_t dim_;
  std::vector<float> min_;   // per dimension
  std::vector<float> step_;  // per dimension, > 0
  // From step_, for Estimate: 1 / step and step^2.
  void DeriveFromSteps();
  std::vector<float> inv_step_, step_sq_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_QUANTIZATION_SQ8_QUANTIZER_H_
