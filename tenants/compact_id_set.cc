#include "tenants/compact_id_set.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace shoal::tenants {
namespace {
constexpr uint64_t kLowMask = (uint64_t{1} << CompactIdSet::kLowBits) - 1;
}  // namespace

CompactIdSet& CompactIdSet::operator=(const CompactIdSet& other) {
  if (this == &other) return *this;
  blocks_.clear();
  blocks_.reserve(other.blocks_.size());
  for (const Block& b : other.blocks_) {
    Block& c = blocks_.emplace_back();
    c.high = b.high;
    c.count = b.count;
    c.low = b.low;
    if (b.bits != nullptr) {
      c.bits = std::make_unique<uint64_t[]>(kWords);
      std::memcpy(c.bits.get(), b.bits.get(), kWords * sizeof(uint64_t));
    }
  }
  size_ = other.size_;
  return *this;
}

std::vector<CompactIdSet::Block>::iterator CompactIdSet::Lower(uint64_t high) {
  return std::lower_bound(blocks_.begin(), blocks_.end(), high,
                          [](const Block& b, uint64_t h) { return b.high < h; });
}

std::vector<CompactIdSet::Block>::const_iterator CompactIdSet::Lower(uint64_t high) const {
  return std::lower_bound(blocks_.begin(), blocks_.end(), high,
                          [](const Block& b, uint64_t h) { return b.high < h; });
}

bool CompactIdSet::contains(uint64_t id) const {
  const uint64_t high = id >> kLowBits;
  const auto b = Lower(high);
  if (b == blocks_.end() || b->high != high) return false;
  const uint64_t low = id & kLowMask;
  if (b->bits != nullptr) return ((b->bits[low >> 6] >> (low & 63)) & 1) != 0;
  return std::binary_search(b->low.begin(), b->low.end(), static_cast<uint16_t>(low));
}

void CompactIdSet::ToBitmap(Block& b) {
  b.bits = std::make_unique<uint64_t[]>(kWords);  // zeroed
  for (uint16_t low : b.low) b.bits[low >> 6] |= uint64_t{1} << (low & 63);
  std::vector<uint16_t>().swap(b.low);
}

void CompactIdSet::ToArray(Block& b) {
  b.low.reserve(b.count);
  for (size_t w = 0; w < kWords; ++w) {
    for (uint64_t bits = b.bits[w]; bits != 0; bits &= bits - 1) {
      b.low.push_back(static_cast<uint16_t>(w * 64 + std::countr_zero(bits)));
    }
  }
  b.bits.reset();
}

bool CompactIdSet::insert(uint64_t id) {
  const uint64_t high = id >> kLowBits;
  auto b = Lower(high);
  if (b == blocks_.end() || b->high != high) {
    b = blocks_.insert(b, Block{});
    b->high = high;
  }
  const uint64_t low = id & kLowMask;
  if (b->bits != nullptr) {
    uint64_t& word = b->bits[low >> 6];
    const uint64_t mask = uint64_t{1} << (low & 63);
    if ((word & mask) != 0) return false;
    word |= mask;
  } else {
    const auto at = std::lower_bound(b->low.begin(), b->low.end(), static_cast<uint16_t>(low));
    if (at != b->low.end() && *at == low) return false;
    if (b->count >= kArrayMax) {
      ToBitmap(*b);
      b->bits[low >> 6] |= uint64_t{1} << (low & 63);
    } else {
      const size_t pos = at - b->low.begin();
      // Grow by a quarter: doubling would leave a third of the capacity unused on average.
      if (b->low.size() == b->low.capacity()) b->low.reserve(b->low.size() * 5 / 4 + 4);
      b->low.insert(b->low.begin() + pos, static_cast<uint16_t>(low));
    }
  }
  ++b->count;
  ++size_;
  return true;
}

bool CompactIdSet::erase(uint64_t id) {
  const uint64_t high = id >> kLowBits;
  const auto b = Lower(high);
  if (b == blocks_.end() || b->high != high) return false;
  const uint64_t low = id & kLowMask;
  if (b->bits != nullptr) {
    uint64_t& word = b->bits[low >> 6];
    const uint64_t mask = uint64_t{1} << (low & 63);
    if ((word & mask) == 0) return false;
    word &= ~mask;
  } else {
    const auto at = std::lower_bound(b->low.begin(), b->low.end(), static_cast<uint16_t>(low));
    if (at == b->low.end() || *at != low) return false;
    b->low.erase(at);
  }
  --size_;
  if (--b->count == 0) {
    blocks_.erase(b);
    if (blocks_.capacity() > 2 * blocks_.size() + 4) blocks_.shrink_to_fit();
    return true;
  }
  if (b->bits != nullptr && b->count < kArrayMax / 2) {
    ToArray(*b);
  } else if (b->bits == nullptr && b->low.capacity() > 2 * b->low.size() + 16) {
    b->low.shrink_to_fit();
  }
  return true;
}

void CompactIdSet::clear() {
  blocks_.clear();
  blocks_.shrink_to_fit();
  size_ = 0;
}

uint64_t CompactIdSet::front() const {
  const Block& b = blocks_.front();
  const uint64_t base = b.high << kLowBits;
  if (b.bits == nullptr) return base | b.low.front();
  size_t w = 0;
  while (b.bits[w] == 0) ++w;
  return base | (w * 64 + static_cast<uint64_t>(std::countr_zero(b.bits[w])));
}

uint64_t CompactIdSet::back() const {
  const Block& b = blocks_.back();
  const uint64_t base = b.high << kLowBits;
  if (b.bits == nullptr) return base | b.low.back();
  size_t w = kWords - 1;
  while (b.bits[w] == 0) --w;
  return base | (w * 64 + 63 - static_cast<uint64_t>(std::countl_zero(b.bits[w])));
}

void CompactIdSet::OrInto(uint64_t first, std::span<uint64_t> words) const {
  const uint64_t end = first + 64 * words.size();
  for (const Block& b : blocks_) {
    const uint64_t base = b.high << kLowBits;
    if (base >= end || base + (uint64_t{1} << kLowBits) <= first) continue;
    if (b.bits == nullptr) {
      for (uint16_t low : b.low) {
        const uint64_t id = base | low;
        if (id < first || id >= end) continue;
        words[(id - first) >> 6] |= uint64_t{1} << ((id - first) & 63);
      }
      continue;
    }
    // Both base and first are multiples of 64: block word w is window word (base - first) / 64 + w.
    for (size_t w = 0; w < kWords; ++w) {
      const uint64_t at = base + 64 * w;
      if (at < first) continue;
      if (at >= end) break;
      words[(at - first) >> 6] |= b.bits[w];
    }
  }
}

std::vector<uint64_t> CompactIdSet::ToVector() const {
  std::vector<uint64_t> out;
  out.reserve(size_);
  ForEach([&](uint64_t id) { out.push_back(id); });
  return out;
}

size_t CompactIdSet::MemoryBytes() const {
  size_t bytes = blocks_.capacity() * sizeof(Block);
  for (const Block& b : blocks_) {
    bytes += b.low.capacity() * sizeof(uint16_t) + (b.bits != nullptr ? kWords * 8 : 0);
  }
  return bytes;
}

}  // namespace shoal::tenants
