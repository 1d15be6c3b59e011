// Prefetch hints for scanning RAM-resident quantized postings one after another
// (SpannIndex::SearchQuantized): the scan kernel prefetches within a posting, these across
// postings. Hints only: they change no result.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_
#define SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/prefetch.h"
#include "index/postings/posting_directory.h"

namespace shoal::index {

// Starts loading a RAM-resident posting's prepared centroid, first codes, ids and norms (the
// scan kernel prefetches ahead within a posting, not across postings). Reads the posting's
// header, which PrefetchHeader started loading a posting earlier.
inline void PrefetchResident(const PostingDirectory& dir, uint32_t p, size_t prepared_dim) {
  base::PrefetchLines(dir.prepared_centroid(p), prepared_dim * sizeof(float));
  const QuantizedPosting& next = *dir.codes[p];
  // The codes' first 4 KiB: the scan kernel asks for the rest ahead of itself (8 KiB ahead).
  base::PrefetchLines(next.codes.data(), std::min<size_t>(next.codes.size(), 4096));
  base::PrefetchLines(next.ids.data(), next.ids.size() * sizeof(uint64_t));
  // Inner-product indexes read each entry's norm beside its estimate (empty otherwise).
  base::PrefetchLines(next.sq_norms.data(), next.sq_norms.size() * sizeof(float));
}

// Starts loading posting p's header (its QuantizedPosting: sizes and buffer pointers), which
// PrefetchResident reads; without it each scan begins with a cache miss on the header
// (docs/PERFORMANCE.md, issue 18's low-dimension pass).
inline void PrefetchHeader(const PostingDirectory& dir, uint32_t p) {
  __builtin_prefetch(dir.codes[p].get());
}

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_PREFETCH_H_
