// IdFilter: the seam through which a search is told which internal ids it may return, checked
// during the scan (an id that is not allowed is never scored). The DB evaluates a metadata filter
// into an IdBitmap once per request and hands it to every index it searches.
//
//   shoal::index::IdBitmap allowed(/*bound=*/next_internal_id);
//   allowed.Set(7);
//   auto hits = flat.Search(queries, n, k, threads, &allowed);  // only id 7 can come back
//
// Thread safety: Allows() is const and may be called concurrently; mutation needs exclusive
// access.
#ifndef SHOAL_INDEX_ID_FILTER_H_
#define SHOAL_INDEX_ID_FILTER_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/bit_count.h"

namespace shoal::index {

class IdFilter {
 public:
  virtual ~IdFilter() = default;
  virtual bool Allows(uint64_t id) const = 0;
  // Appends the ids of `ids` that Allows passes to *out, in order. The default asks Allows id by
  // id; a filter that can test a run of ids without a call for each overrides it (a scan that
  // lists a whole posting's ids through the filter makes one call, not one per id).
  virtual void AppendAllowed(std::span<const uint64_t> ids, std::vector<uint64_t>* out) const {
    for (uint64_t id : ids) {
      if (Allows(id)) out->push_back(id);
    }
  }
};

// A dense bitset over ids [0, bound()); ids at or above bound() are not set. Growing is implicit
// in Set().
class IdBitmap final : public IdFilter {
 public:
  IdBitmap() = default;
  explicit IdBitmap(uint64_t bound) : words_((bound + 63) / 64) {}

  bool Allows(uint64_t id) const override { return Test(id); }

  uint64_t bound() const { return words_.size() * 64; }
  bool Test(uint64_t id) const {
    const uint64_t w = id >> 6;
    return w < words_.size() && ((words_[w] >> (id & 63)) & 1) != 0;
  }
  void Set(uint64_t id) {
    const uint64_t w = id >> 6;
    if (w >= words_.size()) words_.resize(w + 1);
    words_[w] |= uint64_t{1} << (id & 63);
  }
  void Reset(uint64_t id) {
    const uint64_t w = id >> 6;
    if (w < words_.size()) words_[w] &= ~(uint64_t{1} << (id & 63));
  }

  size_t Count() const { return base::CountSetBits(words_); }

  // this &= other / this |= other / this &= ~other.
  void And(const IdBitmap& other) {
    if (words_.size() > other.words_.size()) words_.resize(other.words_.size());
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
  }
  void Or(const IdBitmap& other) {
    if (words_.size() < other.words_.size()) words_.resize(other.words_.size());
    for (size_t i = 0; i < other.words_.size(); ++i) words_[i] |= other.words_[i];
  }
  void AndNot(const IdBitmap& other) {
    const size_t n = std::min(words_.size(), other.words_.size());
    for (size_t i = 0; i < n; ++i) words_[i] &= ~other.words_[i];
  }

  // Calls fn(id) for every set id, ascending.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      for (uint64_t w = words_[i]; w != 0; w &= w - 1) fn(uint64_t{i} * 64 + std::countr_zero(w));
    }
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_ID_FILTER_H_
