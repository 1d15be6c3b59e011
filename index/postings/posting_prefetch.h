// Prefetch hints for scanning RAM-resident quantized postings one after another
// (SpannIndex::SearchQuantized): the scan kernel prefetches within a posting, these across
// postings. Hints only: they change no result.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_
#define SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "index/postings/posting_directory.h"

namespace shoal::index {

// Starts loading a RAM-resident posting's prepared centroid, first codes, ids and norms (the
// scan kernel prefetches ahead within a posting, not across postings). Reads the posting's
// header, which PrefetchHeader started loading a posting earlier.
inline void PrefetchResident(const PostingDirectory& dir, uint32_t p, size_t prepared_dim) {
  const auto* centroid = reinterpret_cast<const char*>(dir.prepared_centroid(p));
  for (size_t b = 0; b < prepared_dim * sizeof(float); b += 64) __builtin_prefetch(centroid + b);
  const QuantizedPosting& next = *dir.codes[p];
  for (size_t b = 0; b < std::min<size_t>(next.codes.size(), 512); b += 64) {
    __builtin_prefetch(next.codes.data() + b);
  }
  const auto* ids = reinterpret_cast<const char*>(next.ids.data());
  for (size_t b = 0; b < next.ids.size() * sizeof(uint64_t); b += 64) __builtin_prefetch(ids + b);
  // Inner-product indexes read each entry's norm beside its estimate (empty otherwise).
  const auto* norms = reinterpret_cast<const char*>(next.sq_norms.data());
  for (size_t b = 0; b < next.sq_norms.size() * sizeof(float); b += 64) {
    __builtin_prefetch(norms + b);
  }
}

// Starts loading posting p's header (its QuantizedPosting: sizes and buffer pointers), which
// PrefetchResident reads; without it each scan begins with a cache miss on the header
// (docs/PERFORMANCE.md, issue 18's low-dimension pass).
inline void PrefetchHeader(const PostingDirectory& dir, uint32_t p) {
  __builtin_prefetch(dir.codes[p].get());
}

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_
