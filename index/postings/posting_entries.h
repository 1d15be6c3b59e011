// The payload of one posting list (the bytes storage/pages/posting_file.h seals into pages):
//   u32 count | u32 dim | count x u64 internal id | count x dim x f32 vector (index form)
// Vectors sit contiguously after the ids so a decoded posting is scanned without gathering.
// A payload may hold several such segments back to back: an online insert appends one to a
// posting (new pages after its extent) instead of rewriting it; decoding concatenates them.
// Pure functions; thread-safe.
#ifndef SHOAL_INDEX_POSTINGS_POSTING_ENTRIES_H_
#define SHOAL_INDEX_POSTINGS_POSTING_ENTRIES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/aligned_vector.h"

namespace shoal::index {

// A decoded posting in RAM: its own entries (ids, vectors) after the entries of `head`, if any. A
// posting appended to online is cached as the new entries over the posting as cached before the
// append (shared, not copied: SpannIndex's cache, UpdateWork::Recache); decoding from the SSD
// gives one segment without a head.
struct DecodedPosting {
  size_t dim = 0;
  std::vector<uint64_t> ids;
  std::vector<float> vectors;                  // ids.size() x dim
  std::shared_ptr<const DecodedPosting> head;  // the entries before these (null: none)
  size_t size() const { return ids.size(); }   // this segment's own entries
  const float* vector(size_t i) const { return vectors.data() + i * dim; }
  // Entries of the whole posting (head's included), and segments in its chain.
  size_t total() const { return (head != nullptr ? head->total() : 0) + ids.size(); }
  size_t segments() const { return (head != nullptr ? head->segments() : 0) + 1; }
  // f(segment) for each segment, the oldest entries first.
  template <typename F>
  void ForEachSegment(F&& f) const {
    if (head != nullptr) head->ForEachSegment(f);
    f(*this);
  }
  size_t MemoryBytes() const {
    return sizeof(*this) + ids.capacity() * sizeof(uint64_t) + vectors.capacity() * sizeof(float) +
           (head != nullptr ? head->MemoryBytes() : 0);
  }
};

// `vectors[i]` points at entry i's dim floats.
std::vector<uint8_t> EncodePostingEntries(std::span<const uint64_t> ids,
                                          std::span<const float* const> vectors, size_t dim);

// DataLoss naming `where` when the payload does not hold what its segment headers say.
absl::Status DecodePostingEntries(std::span<const uint8_t> payload, size_t dim,
                                  const std::string& where, DecodedPosting* out);

// A posting of the quantized tier, as it lives in RAM. Its segments on disk are of two kinds:
//   wide:    u32 count | u32 code_bytes | count x u64 id | count x f32 |x|^2 | count x code
//   compact: u32 count | u32 code_bytes + kSegmentCompact (+ kSegmentNorms) | u64 base |
//            count x u32 (id - base) | (count x f32 |x|^2, with kSegmentNorms) | count x code
// A segment is written compact when its ids span less than 2^32, and keeps |x|^2 only when the
// index reads it (inner-product distances): at 3 bits x 128-d an entry takes 68 bytes instead of
// 76, so a posting read from the SSD takes fewer pages (docs/PERFORMANCE.md, the SSD regime).
// Indexes written before the compact kind read as they were (wide segments).
inline constexpr uint32_t kSegmentCompact = 1u << 31, kSegmentNorms = 1u << 30;
inline constexpr uint32_t kSegmentCodeBytes = kSegmentNorms - 1;  // mask of the code size

struct QuantizedPosting {
  size_t code_bytes = 0;
  std::vector<uint64_t> ids;
  std::vector<float> sq_norms;  // |x|^2 of the index-form vector (read for inner product only;
                                // 0 when decoded from a segment that does not keep it)
  // ids.size() x code_bytes, or, when `packed`, the quantizer's scan form of them
  // (PostingQuantizer::Pack: what the index keeps in RAM; Unpack before encoding to disk).
  // 64-byte aligned: the scan kernels load whole cache lines of it (base/aligned_vector.h).
  base::AlignedVector<uint8_t> codes;
  bool packed = false;
  size_t size() const { return ids.size(); }
  size_t MemoryBytes() const {
    return sizeof(*this) + ids.capacity() * sizeof(uint64_t) + sq_norms.capacity() * sizeof(float) +
           codes.capacity();
  }
};

// Entries [begin, end) of `posting` (all by default) as one segment, keeping |x|^2 when `norms`.
std::vector<uint8_t> EncodeQuantizedEntries(const QuantizedPosting& posting, bool norms,
                                            size_t begin = 0, size_t end = SIZE_MAX);
// Segments of either kind; DataLoss naming `where` when the payload does not hold what a header
// says, a code size differs from `code_bytes`, or `norms` is asked for and a segment lacks them.
absl::Status DecodeQuantizedEntries(std::span<const uint8_t> payload, size_t code_bytes, bool norms,
                                    const std::string& where, QuantizedPosting* out);

}  // namespace shoal::index

#endif  // SHOAL_INDEX_POSTINGS_POSTING_ENTRIES_H_
