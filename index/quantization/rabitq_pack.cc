// RaBitQ's fast-scan form: codes regrouped in blocks of RaBitQ::kScanBlock (rabitq.h), and back.
#include <algorithm>
#include <cstring>

#include "index/quantization/rabitq.h"
#include "index/quantization/rabitq_internal.h"

namespace shoal::index {

size_t RaBitQ::PackedBytes(size_t n) const {
  return (n + kScanBlock - 1) / kScanBlock * block_bytes();
}

void RaBitQ::Pack(const uint8_t* codes, size_t n, uint8_t* packed) const {
  // A block at a time, each output byte written once: per bit plane and 64-dimension word, the
  // block's 32 code words side by side (codes past n zero), then 16 nibble pairs per position.
  const size_t words = padded_dim() / 64, positions = padded_dim() / 4;
  for (size_t first = 0; first < n; first += kScanBlock) {
    uint8_t* block = packed + first / kScanBlock * block_bytes();
    const size_t count = std::min(kScanBlock, n - first);
    const uint8_t* in = codes + first * code_bytes_;
    for (size_t p = 0; p < bits_; ++p) {
      for (size_t w = 0; w < words; ++w) {
        uint64_t word[kScanBlock] = {};
        for (size_t i = 0; i < count; ++i) {
          std::memcpy(&word[i], in + i * code_bytes_ + (p * words + w) * 8, 8);
        }
        uint8_t* out = block + (p * positions + w * 16) * 16;
        for (size_t j = 0; j < 16; ++j, out += 16) {
          for (size_t i = 0; i < 16; ++i) {
            out[i] = static_cast<uint8_t>(((word[i] >> (4 * j)) & 15) |
                                          (((word[i + 16] >> (4 * j)) & 15) << 4));
          }
        }
      }
    }
    float* factors = reinterpret_cast<float*>(block + bits_ * positions * 16);
    for (size_t i = 0; i < kScanBlock; ++i) {
      float f[4] = {};
      if (i < count) {
        std::memcpy(f, in + (i + 1) * code_bytes_ - internal::kRabitqFactorBytes, sizeof(f));
      }
      for (size_t t = 0; t < 4; ++t) factors[t * kScanBlock + i] = f[t];
    }
  }
}

void RaBitQ::PackAt(const uint8_t* code, size_t i, uint8_t* packed) const {
  const size_t d = padded_dim();
  const size_t words = d / 64;
  const size_t positions = d / 4;
  uint8_t* block = packed + i / kScanBlock * block_bytes();
  const size_t slot = i % kScanBlock;
  const unsigned nibble_shift = slot < 16 ? 0 : 4;
  const auto keep = static_cast<uint8_t>(~(15u << nibble_shift));
  for (size_t p = 0; p < bits_; ++p) {
    for (size_t j = 0; j < positions; ++j) {
      uint64_t word;
      std::memcpy(&word, code + (p * words + j / 16) * 8, 8);
      const auto nibble = static_cast<uint8_t>((word >> (4 * (j % 16))) & 15);
      uint8_t& byte = block[(p * positions + j) * 16 + slot % 16];
      byte = static_cast<uint8_t>((byte & keep) | (nibble << nibble_shift));
    }
  }
  float f[4];
  std::memcpy(f, code + code_bytes_ - internal::kRabitqFactorBytes, sizeof(f));
  float* factors = reinterpret_cast<float*>(block + bits_ * positions * 16);
  for (size_t t = 0; t < 4; ++t) factors[t * kScanBlock + slot] = f[t];
}

void RaBitQ::Unpack(const uint8_t* packed, size_t n, uint8_t* codes) const {
  for (size_t i = 0; i < n; ++i) UnpackAt(packed, i, codes + i * code_bytes_);
}

void RaBitQ::UnpackAt(const uint8_t* packed, size_t i, uint8_t* code) const {
  const size_t d = padded_dim();
  const size_t words = d / 64;
  const size_t positions = d / 4;
  const uint8_t* block = packed + i / kScanBlock * block_bytes();
  const size_t slot = i % kScanBlock;
  const unsigned nibble_shift = slot < 16 ? 0 : 4;
  for (size_t p = 0; p < bits_; ++p) {
    for (size_t w = 0; w < words; ++w) {
      uint64_t word = 0;
      for (size_t j = 0; j < 16; ++j) {
        const uint8_t byte = block[(p * positions + w * 16 + j) * 16 + slot % 16];
        word |= uint64_t{(byte >> nibble_shift) & 15u} << (4 * j);
      }
      std::memcpy(code + (p * words + w) * 8, &word, 8);
    }
  }
  const float* factors = reinterpret_cast<const float*>(block + bits_ * positions * 16);
  float f[4];
  for (size_t t = 0; t < 4; ++t) f[t] = factors[t * kScanBlock + slot];
  std::memcpy(code + code_bytes_ - internal::kRabitqFactorBytes, f, sizeof(f));
}

}  // namespace shoal::index
