// Fuzzes on-disk decoding (storage/records/record_codec.h, storage/pages/page_format.h): records,
// record keys and key-map row keys from the input; a page built from the input checked as read, and
// the same page sealed and checked again. Decoders must reject bad bytes with DataLoss, never
// crash; what decodes must re-encode to a record that decodes again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "storage/pages/page_format.h"
#include "storage/records/record_codec.h"

namespace {

using shoal::storage::PageKind;

void FuzzRecords(std::string_view bytes) {
  absl::StatusOr<shoal::Record> record = shoal::storage::DecodeRecord(bytes, "fuzz");
  if (record.ok()) {
    const std::string encoded = shoal::storage::EncodeRecord(*record);
    absl::StatusOr<shoal::Record> again = shoal::storage::DecodeRecord(encoded, "fuzz");
    if (!again.ok() || shoal::storage::EncodeRecord(*again) != encoded) std::abort();
  }
  (void)shoal::storage::DecodeRecordKey(bytes, "fuzz");
  absl::StatusOr<shoal::Key> key = shoal::storage::DecodeKeyMapRowKey(bytes);
  if (key.ok()) {
    const std::string row = shoal::storage::KeyMapRowKey(7, *key);
    if (!shoal::storage::DecodeKeyMapRowKey(row).ok()) std::abort();
  }
}

void FuzzPage(const uint8_t* data, size_t size) {
  std::vector<uint8_t> page(shoal::storage::kPageSize, 0);
  std::memcpy(page.data(), data, std::min(size, page.size()));
  const PageKind kinds[] = {PageKind::kPosting, PageKind::kVector, PageKind::kVectorHeader,
                            PageKind::kVectorTable};
  const PageKind kind = kinds[size % 4];
  const uint64_t owner = shoal::storage::PageOwner(page.data());
  (void)shoal::storage::PagePayloadBytes(page.data());
  (void)shoal::storage::PageIsZero(page.data());
  (void)shoal::storage::CheckPage(page.data(), kind, owner, 0, "fuzz", 0);

  // The same bytes as the payload of a page sealed by the writer: it must check OK.
  const size_t payload = std::min(size, shoal::storage::kPagePayload);
  std::vector<uint8_t> sealed(shoal::storage::kPageSize, 0);
  std::memcpy(sealed.data() + shoal::storage::kPageHeader, data, payload);
  shoal::storage::SealPage(sealed.data(), kind, owner, 3, payload);
  if (!shoal::storage::CheckPage(sealed.data(), kind, owner, 3, "fuzz", 0).ok()) std::abort();
  if (shoal::storage::PagePayloadBytes(sealed.data()) != payload) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzRecords(std::string_view(reinterpret_cast<const char*>(data), size));
  FuzzPage(data, size);
  return 0;
}
