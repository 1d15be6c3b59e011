// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of every
// Shoal data page. Uses the SSE4.2 `crc32` instruction when the CPU has it (checked once at
// run time) and a slicing-by-8 table otherwise; both give the same value.
//
//   uint32_t crc = Crc32c(page + 4, kPageSize - 4);
//   uint32_t same = Crc32c(b, nb, Crc32c(a, na));   // == Crc32c of a then b
//
// Thread-safe (pure functions).
#ifndef SHOAL_STORAGE_IO_CRC32C_H_
#define SHOAL_STORAGE_IO_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace shoal::storage {

// CRC-32C of `n` bytes at `data`, continuing from `crc` (the value of a previous call over the
// preceding bytes; 0 to start). Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

// The two implementations, for tests and benchmarks. Crc32cHardware must only be called when
// Crc32cHasHardware() is true.
uint32_t Crc32cSoftware(const void* data, size_t n, uint32_t crc = 0);
uint32_t Crc32cHardware(const void* data, size_t n, uint32_t crc = 0);
bool Crc32cHasHardware();

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_IO_CRC32C_H_
