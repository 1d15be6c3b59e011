// Random 4 KiB O_DIRECT reads of a 256 MiB file through BlockReader, io_uring vs pread, at
// batch sizes 1/8/32/64 (one ReadBatch per batch: the batch is the queue depth for io_uring;
// pread serves it one read at a time). Reports reads per second ("IOPS"). Also the CRC-32C
// cost per page.
//
//   build-io/bin/block_reader_benchmark [--benchmark_min_time=2]
//
// The file is written once with O_DIRECT (SHOAL_BENCH_FILE, default
// /var/tmp/shoal_block_reader_bench.dat) and dropped from the page cache before each run
// (POSIX_FADV_DONTNEED), so reads hit the device.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "storage/io/block_reader.h"
#include "storage/io/crc32c.h"

namespace shoal::storage {
namespace {

constexpr uint64_t kFileBytes = 256ull << 20;

std::string BenchFile() {
  const char* env = std::getenv("SHOAL_BENCH_FILE");
  return env ? env : "/var/tmp/shoal_block_reader_bench.dat";
}

// Creates the file (O_DIRECT writes of random bytes) unless it already has the right size.
bool EnsureFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == kFileBytes) {
    return true;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) return false;
  constexpr size_t kChunk = 1 << 20;
  internal::AlignedBuffer buf = internal::AllocateAligned(kChunk);
  std::mt19937_64 rng(1);
  for (uint64_t off = 0; off < kFileBytes; off += kChunk) {
    for (size_t i = 0; i < kChunk; i += 8) {
      const uint64_t v = rng();
      std::memcpy(buf.get() + i, &v, 8);
    }
    if (::pwrite(fd, buf.get(), kChunk, static_cast<off_t>(off)) != static_cast<ssize_t>(kChunk)) {
      ::close(fd);
      return false;
    }
  }
  ::fdatasync(fd);
  ::close(fd);
  return true;
}

void DropCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void BM_RandomPageReads(benchmark::State& state) {
  const auto backend = state.range(0) == 0 ? IoBackend::kIoUring : IoBackend::kPread;
  const size_t batch = static_cast<size_t>(state.range(1));
  const std::string path = BenchFile();
  if (!EnsureFile(path)) {
    state.SkipWithError(("cannot create " + path).c_str());
    return;
  }
  DropCache(path);
  auto reader = BlockReader::Open(path, backend, 64);
  if (!reader.ok()) {
    state.SkipWithError(std::string(reader.status().message()).c_str());
    return;
  }
  state.SetLabel((*reader)->backend());
  std::mt19937_64 rng(42);
  std::vector<ReadRequest> reqs(batch);
  uint64_t sink = 0;
  for (auto _ : state) {
    for (auto& r : reqs) r = {(rng() % (kFileBytes / kPageSize)) * kPageSize, kPageSize};
    absl::Status s = (*reader)->ReadBatch(reqs, [&](size_t, std::span<const uint8_t> b) {
      sink += b[0];
      return absl::OkStatus();
    });
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.counters["IOPS"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                              benchmark::Counter::kIsRate);
}

BENCHMARK(BM_RandomPageReads)
    ->ArgNames({"pread", "batch"})
    ->ArgsProduct({{0, 1}, {1, 8, 32, 64}})
    ->UseRealTime()
    ->MinTime(1.0);

// CRC-32C of one page, the CPU cost CheckPage adds to every page read (0: table, 1: SSE4.2).
void BM_Crc32cPage(benchmark::State& state) {
  const bool hw = state.range(0) == 1;
  if (hw && !Crc32cHasHardware()) {
    state.SkipWithError("no SSE4.2");
    return;
  }
  std::vector<uint8_t> page(kPageSize, 0x5A);
  for (auto _ : state) {
    uint32_t crc =
        hw ? Crc32cHardware(page.data(), page.size()) : Crc32cSoftware(page.data(), page.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPageSize));
}

BENCHMARK(BM_Crc32cPage)->ArgName("hw")->Arg(0)->Arg(1);

}  // namespace
}  // namespace shoal::storage

BENCHMARK_MAIN();
