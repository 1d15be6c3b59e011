// The 4 KiB page shared by every Shoal data file (posting file, vector file). Each page carries
// its own checksum and says what it is and whom it belongs to, so a misdirected or stale read is
// caught as surely as a flipped bit:
//
//   offset  size  field
//   0       4     crc32c of bytes 4..4095
//   4       4     magic: PageKind
//   8       8     owner (posting id, vector page number or vector id)
//   16      4     sequence (page index within its owner)
//   20      2     payload bytes (<= kPagePayload)
//   22      2     flags (0 for now)
//   24      ...   payload, then zeros up to 4096
//
// All integers are little-endian. Usage:
//
//   alignas(4096) uint8_t page[kPageSize];
//   memcpy(page + kPageHeader, data, n);
//   SealPage(page, PageKind::kPosting, posting_id, 0, n);
//   ...
//   SHOAL_RETURN_IF_ERROR(CheckPage(page, PageKind::kPosting, posting_id, 0, path, offset));
//
// Thread-safe (pure functions).
#ifndef SHOAL_STORAGE_PAGES_PAGE_FORMAT_H_
#define SHOAL_STORAGE_PAGES_PAGE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "storage/io/block_reader.h"

namespace shoal::storage {

enum class PageKind : uint32_t {
  kPosting = 0x53504f31 /*"SPO1"*/,
  kVector = 0x53564531 /*"SVE1"*/,
  kVectorHeader = 0x53564831 /*"SVH1": page 0 of a compacted vector file*/,
  kVectorTable = 0x53565431 /*"SVT1": its table of packed ids*/
};

inline constexpr size_t kPageHeader = 24;
inline constexpr size_t kPagePayload = kPageSize - kPageHeader;

// Fills in the header of `page` (kPageSize bytes, payload already at page + kPageHeader), zeroes
// the bytes after the payload and writes the checksum. Requires payload_bytes <= kPagePayload.
void SealPage(uint8_t* page, PageKind kind, uint64_t owner, uint32_t sequence,
              size_t payload_bytes);

// OK when `page` is intact and belongs to (kind, owner, sequence). Otherwise DataLoss with a
// message "PATH: page at offset OFF: <what> (<kind> <owner>)" where <what> is one of
// "checksum mismatch", "wrong kind ...", "wrong owner ...", "wrong sequence ...",
// "payload size N out of range". `path` and `offset` only name the page in the message.
absl::Status CheckPage(const uint8_t* page, PageKind kind, uint64_t owner, uint32_t sequence,
                       const std::string& path, uint64_t offset);

// Header fields of a page (no checks).
uint32_t PagePayloadBytes(const uint8_t* page);
uint64_t PageOwner(const uint8_t* page);

// True when all kPageSize bytes are zero: a page that was never written (a hole or a
// preallocated range), as opposed to a corrupt one.
bool PageIsZero(const uint8_t* page);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_PAGES_PAGE_FORMAT_H_
