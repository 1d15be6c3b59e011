#include "tenants/compact_id_set.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <new>
#include <utility>

#include "base/prefetch.h"

namespace shoal::tenants {
namespace {
constexpr uint64_t kLowMask = (uint64_t{1} << CompactIdSet::kLowBits) - 1;
}  // namespace

CompactIdSet::Block::Block(Block&& o) noexcept
    : high(o.high), count(o.count), cap(o.cap), bitmap(o.bitmap) {
  std::memcpy(inline_low, o.inline_low, sizeof(inline_low));  // the pointer or the inline ids
  o.data = nullptr;
  o.count = 0;
  o.cap = 0;
  o.bitmap = 0;
}

CompactIdSet::Block& CompactIdSet::Block::operator=(Block&& o) noexcept {
  if (this == &o) return *this;
  Free();
  std::memcpy(inline_low, o.inline_low, sizeof(inline_low));
  high = o.high;
  count = o.count;
  cap = o.cap;
  bitmap = o.bitmap;
  o.data = nullptr;
  o.count = 0;
  o.cap = 0;
  o.bitmap = 0;
  return *this;
}

CompactIdSet& CompactIdSet::operator=(const CompactIdSet& other) {
  if (this == &other) return *this;
  blocks_.clear();
  blocks_.reserve(other.blocks_.size());
  for (const Block& b : other.blocks_) {
    Block& c = blocks_.emplace_back();
    c.high = b.high;
    c.count = b.count;
    c.bitmap = b.bitmap;
    c.cap = b.bitmap ? 0 : b.count;
    if (b.bitmap) {
      c.data = ::operator new(kWords * sizeof(uint64_t));
      std::memcpy(c.data, b.data, kWords * sizeof(uint64_t));
      continue;
    }
    if (c.heap()) c.data = ::operator new(b.count * sizeof(uint16_t));
    std::memcpy(c.low(), b.low(), b.count * sizeof(uint16_t));
  }
  return *this;
}

CompactIdSet::Blocks::iterator CompactIdSet::Lower(uint64_t high) {
  return std::lower_bound(blocks_.begin(), blocks_.end(), high,
                          [](const Block& b, uint64_t h) { return b.high < h; });
}

CompactIdSet::Blocks::const_iterator CompactIdSet::Lower(uint64_t high) const {
  return std::lower_bound(blocks_.begin(), blocks_.end(), high,
                          [](const Block& b, uint64_t h) { return b.high < h; });
}

bool CompactIdSet::contains(uint64_t id) const {
  const Block* b = BlockOf(id);
  if (b == nullptr) return false;
  const uint64_t low = id & kLowMask;
  if (b->bitmap) return BitSet(*b, low);
  const uint16_t* at = b->low();
  for (uint32_t n = b->count; n > 1;) Halve(at, n, low);
  return b->count > 0 && *at == low;
}

void CompactIdSet::ContainsEach(std::span<const uint64_t> ids, uint8_t* found) const {
  constexpr size_t kLanes = 16;
  const uint16_t* at[kLanes];
  uint32_t n[kLanes];
  uint16_t low[kLanes];
  for (size_t begin = 0; begin < ids.size(); begin += kLanes) {
    const size_t lanes = std::min(kLanes, ids.size() - begin);
    for (size_t j = 0; j < lanes; ++j) {
      n[j] = 0;  // no array to search
      const Block* b = BlockOf(ids[begin + j]);
      if (b == nullptr) continue;
      low[j] = static_cast<uint16_t>(ids[begin + j] & kLowMask);
      if (b->bitmap) {
        found[begin + j] |= BitSet(*b, low[j]) ? 1 : 0;
        continue;
      }
      at[j] = b->low();
      n[j] = b->count;  // at least 1: no block is empty
    }
    for (bool more = true; more;) {
      more = false;
      for (size_t j = 0; j < lanes; ++j) {
        if (n[j] <= 1) continue;
        Halve(at[j], n[j], low[j]);
        more |= n[j] > 1;
      }
    }
    for (size_t j = 0; j < lanes; ++j) {
      if (n[j] == 1) found[begin + j] |= *at[j] == low[j] ? 1 : 0;
    }
  }
}

void CompactIdSet::Prefetch(uint64_t id) const {
  const Block* b = BlockOf(id);
  if (b == nullptr || !b->heap()) return;
  if (b->bitmap) {
    __builtin_prefetch(b->bits() + ((id & kLowMask) >> 6));
    return;
  }
  const size_t bytes = b->count * sizeof(uint16_t);
  if (bytes > kPrefetchLines * base::kCacheLine) return;
  base::PrefetchLines(b->low(), bytes);
}

void CompactIdSet::Resize(Block& b, uint32_t cap) {
  uint16_t kept[Block::kInline];
  if (cap <= Block::kInline) {  // into the block itself
    std::memcpy(kept, b.low(), b.count * sizeof(uint16_t));
    b.Free();
    b.cap = cap;
    std::memcpy(b.inline_low, kept, b.count * sizeof(uint16_t));
    return;
  }
  void* data = ::operator new(cap * sizeof(uint16_t));
  if (b.count > 0) std::memcpy(data, b.low(), b.count * sizeof(uint16_t));
  b.Free();
  b.data = data;
  b.cap = cap;
}

void CompactIdSet::ToBitmap(Block& b) {
  auto* bits = static_cast<uint64_t*>(::operator new(kWords * sizeof(uint64_t)));
  std::memset(bits, 0, kWords * sizeof(uint64_t));
  for (uint32_t i = 0; i < b.count; ++i) bits[b.low()[i] >> 6] |= uint64_t{1} << (b.low()[i] & 63);
  b.Free();
  b.data = bits;
  b.cap = 0;
  b.bitmap = 1;
}

void CompactIdSet::ToArray(Block& b) {
  // (A bitmap turns back at kArrayMax / 2 ids: always a heap array.)
  const uint32_t cap = std::max<uint32_t>(b.count, Block::kInline + 1);
  auto* low = static_cast<uint16_t*>(::operator new(cap * sizeof(uint16_t)));
  uint32_t n = 0;
  for (size_t w = 0; w < kWords; ++w) {
    for (uint64_t bits = b.bits()[w]; bits != 0; bits &= bits - 1) {
      low[n++] = static_cast<uint16_t>(w * 64 + std::countr_zero(bits));
    }
  }
  b.Free();
  b.data = low;
  b.cap = cap;
  b.bitmap = 0;
}

bool CompactIdSet::insert(uint64_t id) {
  assert((id >> 48) == 0);
  const uint64_t high = id >> kLowBits;
  auto b = Lower(high);
  if (b == blocks_.end() || b->high != high) {
    b = blocks_.insert(b, Block{});
    b->high = static_cast<uint32_t>(high);
  }
  const uint64_t low = id & kLowMask;
  if (b->bitmap) {
    uint64_t& word = b->bits()[low >> 6];
    const uint64_t mask = uint64_t{1} << (low & 63);
    if ((word & mask) != 0) return false;
    word |= mask;
  } else {
    uint16_t* end = b->low() + b->count;
    uint16_t* at = std::lower_bound(b->low(), end, static_cast<uint16_t>(low));
    if (at != end && *at == low) return false;
    if (b->count >= kArrayMax) {
      ToBitmap(*b);
      b->bits()[low >> 6] |= uint64_t{1} << (low & 63);
    } else {
      const size_t pos = at - b->low();
      // Grow by a quarter: doubling would leave a third of the capacity unused on average.
      if (b->count == b->cap) Resize(*b, b->count * 5 / 4 + 4);
      uint16_t* p = b->low() + pos;
      std::memmove(p + 1, p, (b->count - pos) * sizeof(uint16_t));
      *p = static_cast<uint16_t>(low);
    }
  }
  ++b->count;
  return true;
}

bool CompactIdSet::erase(uint64_t id) {
  const uint64_t high = id >> kLowBits;
  const auto b = Lower(high);
  if (b == blocks_.end() || b->high != high) return false;
  const uint64_t low = id & kLowMask;
  if (b->bitmap) {
    uint64_t& word = b->bits()[low >> 6];
    const uint64_t mask = uint64_t{1} << (low & 63);
    if ((word & mask) == 0) return false;
    word &= ~mask;
  } else {
    uint16_t* end = b->low() + b->count;
    uint16_t* at = std::lower_bound(b->low(), end, static_cast<uint16_t>(low));
    if (at == end || *at != low) return false;
    std::memmove(at, at + 1, (end - at - 1) * sizeof(uint16_t));
  }
  if (--b->count == 0) {
    blocks_.erase(b);
    // (Back in the set itself once one block is left.)
    if (blocks_.capacity() > 2 * blocks_.size() + 4 || blocks_.size() == 1) blocks_.shrink_to_fit();
    return true;
  }
  if (b->bitmap && b->count < kArrayMax / 2) {
    ToArray(*b);
  } else if (!b->bitmap && b->cap > 2 * b->count + 16) {
    Resize(*b, b->count);
  }
  return true;
}

void CompactIdSet::clear() {
  blocks_.clear();
  blocks_.shrink_to_fit();
}

uint64_t CompactIdSet::front() const {
  const Block& b = blocks_.front();
  const uint64_t base = uint64_t{b.high} << kLowBits;
  if (!b.bitmap) return base | b.low()[0];
  size_t w = 0;
  while (b.bits()[w] == 0) ++w;
  return base | (w * 64 + static_cast<uint64_t>(std::countr_zero(b.bits()[w])));
}

uint64_t CompactIdSet::back() const {
  const Block& b = blocks_.back();
  const uint64_t base = uint64_t{b.high} << kLowBits;
  if (!b.bitmap) return base | b.low()[b.count - 1];
  size_t w = kWords - 1;
  while (b.bits()[w] == 0) --w;
  return base | (w * 64 + 63 - static_cast<uint64_t>(std::countl_zero(b.bits()[w])));
}

CompactIdSet::Extent CompactIdSet::ExtentOf(std::initializer_list<const CompactIdSet*> sets) {
  Extent e;
  for (const CompactIdSet* set : sets) {
    if (set == nullptr || set->empty()) continue;
    e.lo = std::min(e.lo, set->front());
    e.hi = std::max(e.hi, set->back());
    e.n += set->size();
  }
  return e;
}

void CompactIdSet::OrInto(uint64_t first, std::span<uint64_t> words) const {
  const uint64_t end = first + 64 * words.size();
  for (const Block& b : blocks_) {
    const uint64_t base = uint64_t{b.high} << kLowBits;
    if (base >= end || base + (uint64_t{1} << kLowBits) <= first) continue;
    if (!b.bitmap) {
      const uint16_t* low = b.low();
      if (b.count > 0 && base + low[0] >= first && base + low[b.count - 1] < end) {
        // The whole block in the window (the usual case: a window spans its sets): no range
        // check per id.
        const uint64_t offset = base - first;
        for (uint32_t i = 0; i < b.count; ++i) {
          const uint64_t at = offset + low[i];
          words[at >> 6] |= uint64_t{1} << (at & 63);
        }
        continue;
      }
      for (uint32_t i = 0; i < b.count; ++i) {
        const uint64_t id = base | low[i];
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
      words[(at - first) >> 6] |= b.bits()[w];
    }
  }
}

std::vector<uint64_t> CompactIdSet::ToVector() const {
  std::vector<uint64_t> out;
  out.reserve(size());
  ForEach([&](uint64_t id) { out.push_back(id); });
  return out;
}

size_t CompactIdSet::MemoryBytes() const {
  size_t bytes = blocks_.capacity() > 1 ? blocks_.capacity() * sizeof(Block) : 0;
  for (const Block& b : blocks_) {
    if (b.heap()) bytes += b.bitmap ? kWords * sizeof(uint64_t) : b.cap * sizeof(uint16_t);
  }
  return bytes;
}

}  // namespace shoal::tenants
