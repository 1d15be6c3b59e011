#include "storage/pages/page_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "storage/io/crc32c.h"

namespace shoal::storage {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

const char* KindName(uint32_t magic) {
  switch (static_cast<PageKind>(magic)) {
    case PageKind::kPosting:
      return "posting";
    case PageKind::kVector:
      return "vector";
    case PageKind::kVectorHeader:
      return "vector file header";
    case PageKind::kVectorTable:
      return "vector id table";
  }
  return "unknown";
}

absl::Status PageError(const std::string& path, uint64_t offset, const std::string& what,
                       PageKind kind, uint64_t owner) {
  return absl::DataLossError(absl::StrCat(path, ": page at offset ", offset, ": ", what, " (",
                                          KindName(static_cast<uint32_t>(kind)), " ", owner, ")"));
}

}  // namespace

void SealPage(uint8_t* page, PageKind kind, uint64_t owner, uint32_t sequence,
              size_t payload_bytes) {
  Store<uint32_t>(page + 4, static_cast<uint32_t>(kind));
  Store<uint64_t>(page + 8, owner);
  Store<uint32_t>(page + 16, sequence);
  Store<uint16_t>(page + 20, static_cast<uint16_t>(payload_bytes));
  Store<uint16_t>(page + 22, 0);
  std::memset(page + kPageHeader + payload_bytes, 0, kPagePayload - payload_bytes);
  Store<uint32_t>(page, Crc32c(page + 4, kPageSize - 4));
}

absl::Status CheckPage(const uint8_t* page, PageKind kind, uint64_t owner, uint32_t sequence,
                       const std::string& path, uint64_t offset) {
  if (Load<uint32_t>(page) != Crc32c(page + 4, kPageSize - 4)) {
    return PageError(path, offset, "checksum mismatch", kind, owner);
  }
  const uint32_t magic = Load<uint32_t>(page + 4);
  if (magic != static_cast<uint32_t>(kind)) {
    return PageError(path, offset, absl::StrCat("wrong kind ", KindName(magic)), kind, owner);
  }
  const uint64_t got_owner = Load<uint64_t>(page + 8);
  if (got_owner != owner) {
    return PageError(path, offset, absl::StrCat("wrong owner ", got_owner), kind, owner);
  }
  const uint32_t got_sequence = Load<uint32_t>(page + 16);
  if (got_sequence != sequence) {
    return PageError(path, offset,
                     absl::StrCat("wrong sequence ", got_sequence, ", expected ", sequence), kind,
                     owner);
  }
  const uint32_t payload = Load<uint16_t>(page + 20);
  if (payload > kPagePayload) {
    return PageError(path, offset, absl::StrCat("payload size ", payload, " out of range"), kind,
                     owner);
  }
  return absl::OkStatus();
}

uint32_t PagePayloadBytes(const uint8_t* page) { return Load<uint16_t>(page + 20); }
uint64_t PageOwner(const uint8_t* page) { return Load<uint64_t>(page + 8); }

bool PageIsZero(const uint8_t* page) {
  static const uint8_t kZeros[kPageSize] = {};
  return std::memcmp(page, kZeros, kPageSize) == 0;
}

}  // namespace shoal::storage
