// The full-precision vector file: one fixed slot of `dim` floats per internal id, stored once
// (never replicated across postings), in checksummed 4 KiB pages (page_format.h, kind kVector).
//
// Layout, chosen so that no vector straddles a page unless it must:
// - Small vectors (4*dim <= kPagePayload): SlotsPerPage(dim) slots per page. SlotsPerPage is
//   floor(kPagePayload / (4*dim)), less a few where a page holds several slots and their presence
//   bitmap (ceil(slots/8) bytes after the slots) would not fit. Page owner = page number,
//   sequence 0.
// - Large vectors (4*dim > kPagePayload): each vector takes PagesPerVector(dim) =
//   ceil(4*dim / kPagePayload) consecutive pages; owner = id, sequence = piece.
// Slots come in two regions:
// - The direct region: id `base_id + j` has slot j, so any id >= base_id can be written.
// - The packed region (only in a file written by WriteCompacted): the slots of a sorted table of
//   ids kept when the file was compacted, slot k holding the k-th id of the table. An id in the
//   table lives there (also one >= base_id); an id below base_id outside it cannot be written.
// A file made by Create (the build) has no packed region and base_id 0: page id / slots, slot
// id % slots. A compacted file starts with a header page (kind kVectorHeader: base id, region
// offsets), then the packed slots, the id table (kind kVectorTable), and the direct region last,
// where it grows. Reading an id that was never written gives NotFound (slot bit clear, hole, past
// the end, or below base_id and not in the table).
//
// Compaction (vector_file_compaction.cc): WriteCompacted copies the vectors some predicate keeps
// into a new file whose packed region holds them; the caller renames it over the old file.
//
//   SHOAL_ASSIGN_OR_RETURN(auto vf, VectorFile::Create(path, 128, IoBackend::kAuto));
//   for (...) SHOAL_RETURN_IF_ERROR(vf->Put(id, v));
//   SHOAL_RETURN_IF_ERROR(vf->Sync());
//   SHOAL_RETURN_IF_ERROR(vf->ReadBatch(ids, [&](size_t i, const float* v) { ...; return OK; }));
//
// Thread safety: Put and Sync are serialised by a mutex. ReadBatch may be called from any
// number of threads; it sees the vectors Put before the last Sync() (Put buffers pages in
// memory and writes them out when 16 MiB are dirty, so later ones may or may not be visible
// before Sync()). A ReadBatch racing with the write-out of a page shared by several slots (an
// online insert joining a page readers use) re-reads a page that fails its checksum a few times,
// then takes the buffered copy when the page is still buffered (a write-out that failed part-way
// tore it), before reporting DataLoss. Scan and WriteCompacted (reading this file) must not run
// concurrently with Put or Sync on it.
//
// Failures do not latch; writes resume once the file system accepts them. The buffered pages stay
// in memory until a Sync has written them out and fdatasynced them, so a Sync after a failed write
// (even a torn one) or a failed fdatasync writes them all again: the file's pages converge on the
// buffered ones. Pages that a Put wrote out early (over 16 MiB dirty) and a later Sync failed to
// make durable are not kept: the caller Puts those vectors again (SpannUpdater retries the whole
// batch).
#ifndef SHOAL_STORAGE_PAGES_VECTOR_FILE_H_
#define SHOAL_STORAGE_PAGES_VECTOR_FILE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/io/block_reader.h"
#include "storage/io/file_system.h"
#include "storage/pages/page_format.h"

namespace shoal::storage {

class VectorFile {
 public:
  using VectorCallback = std::function<absl::Status(size_t index, const float* vector)>;
  using IdVectorCallback = std::function<absl::Status(uint64_t id, const float* vector)>;

  // Creates (truncating) or opens `path` for vectors of `dim` floats (1 <= dim <= kMaxDim, else
  // InvalidArgument), read through `io` (see BlockReader::Open) and written through `fs` (not
  // owned). Open: NotFound when the file does not exist.
  static absl::StatusOr<std::unique_ptr<VectorFile>> Create(const std::string& path, uint32_t dim,
                                                            IoBackend io,
                                                            FileSystem* fs = FileSystem::Default());
  static absl::StatusOr<std::unique_ptr<VectorFile>> Open(const std::string& path, uint32_t dim,
                                                          IoBackend io,
                                                          FileSystem* fs = FileSystem::Default());
  ~VectorFile();

  // Ids are below 2^40 (so that page offsets cannot overflow).
  static constexpr uint64_t kMaxId = (uint64_t{1} << 40) - 1;
  static constexpr uint32_t kMaxDim = 1 << 16;

  // Stores `vector` (dim floats) as id's slot; ids may come in any order; a later Put of the same
  // id replaces it. InvalidArgument for an id > kMaxId; FailedPrecondition for an id below
  // base_id() that the packed table does not hold; Internal/ResourceExhausted on write errors;
  // DataLoss when the page holding the slot is corrupt on disk.
  absl::Status Put(uint64_t id, const float* vector);
  // Writes out buffered pages and fdatasyncs: every Put so far is durable and readable. On an
  // error (Internal / ResourceExhausted naming the file) the buffered pages are kept for the next
  // Sync (see the file comment).
  absl::Status Sync();

  // Reads all ids with one batched read (pages shared by several ids are read once) and calls
  // on_vector(i, vector of ids[i]) as pages arrive, in any order; the pointer is valid only
  // during the call. NotFound naming the id when one was never written (checked before any
  // read where the id lies past the end of the file); DataLoss naming the file and page offset
  // for a corrupt page; BlockReader errors; or the first error returned by on_vector.
  absl::Status ReadBatch(std::span<const uint64_t> ids, const VectorCallback& on_vector);

  // Calls on_vector(id, vector) for every vector written, ascending by id (buffered pages are
  // written out first); stops at the first error it returns. DataLoss for a corrupt page.
  absl::Status Scan(const IdVectorCallback& on_vector);

  // Writes a compacted copy of `source` to `path` (created or truncated through `fs`) and
  // fdatasyncs it: every vector of `source` for which keep(id) holds goes to the packed region;
  // the direct region starts empty at `base_id`. On error `path` is removed (best effort). The
  // caller publishes it (rename over the old file, directory fsync) and opens it with Open.
  struct Compaction {
    uint64_t kept = 0;          // vectors copied
    uint64_t dropped = 0;       // vectors of `source` not kept
    uint64_t bytes_before = 0;  // source's size
    uint64_t bytes_after = 0;   // the new file's size
  };
  static absl::StatusOr<Compaction> WriteCompacted(VectorFile& source, const std::string& path,
                                                   uint64_t base_id,
                                                   const std::function<bool(uint64_t)>& keep,
                                                   FileSystem* fs);

  // Slots the file spans: packed slots plus direct slots up to the end of the file (the live
  // fraction of the file is live vectors / this).
  uint64_t SlotCapacity() const;
  uint64_t size_bytes() const;
  uint64_t base_id() const { return base_id_; }
  uint64_t packed_count() const { return packed_ids_.size(); }

  uint64_t bytes_read() const;
  uint32_t dim() const { return dim_; }
  const std::string& path() const { return path_; }
  std::string backend() const { return reader_->backend(); }
  IoBackend io() const { return io_; }  // as asked at Create / Open

  // Layout (see above). SlotsPerPage is 0 for large vectors; PagesPerVector is 1 for small.
  static uint32_t SlotsPerPage(uint32_t dim);
  static uint32_t PagesPerVector(uint32_t dim);

 private:
  class RegionScan;
  // Where an id's slot is: its first page, the slot within it (small vectors) and the owner its
  // pages are sealed with.
  struct Slot {
    uint64_t page = 0;
    uint32_t slot = 0;
    uint64_t owner = 0;
  };
  // A page not yet written out, with the owner it is sealed with.
  struct DirtyPageBuf {
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t owner = 0;
    uint32_t sequence = 0;
  };

  VectorFile(std::unique_ptr<File> file, uint32_t dim, uint64_t file_pages,
             std::unique_ptr<BlockReader> reader);
  static absl::StatusOr<std::unique_ptr<VectorFile>> Make(const std::string& path, uint32_t dim,
                                                          IoBackend io, FileSystem* fs,
                                                          bool create);
  // The header page of a compacted file (see the file comment), and reading it back with the
  // id table (a file without one has a build's layout).
  struct Header {
    uint64_t base_id = 0;
    uint64_t packed_count = 0;
    uint64_t packed_first_page = 0;
    uint64_t table_first_page = 0;
    uint64_t direct_first_page = 0;
  };
  static void SealHeader(uint8_t* page, uint32_t dim, const Header& h);
  static constexpr size_t kIdsPerTablePage = kPagePayload / 8;
  absl::Status ReadHeader();
  // False when `id` has no slot (below base_id and not in the packed table).
  bool Locate(uint64_t id, Slot* where) const;
  // A page to modify in memory: loaded from disk when it exists there.
  absl::StatusOr<uint8_t*> DirtyPage(uint64_t page, uint64_t owner, uint32_t sequence, bool load)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes out the dirty pages; keeps them buffered when `keep` (Sync drops them only once they
  // are durable) or when a write fails.
  absl::Status Flush(bool keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies buffered page `page_no`, sealed, to `out` (kPageSize bytes); false when not buffered.
  bool CopyBufferedPage(uint64_t page_no, uint8_t* out) ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t PayloadBytes(uint32_t piece) const;
  // Checks one page read for vector `id` (piece `seq` of a vector, or slot page `owner`):
  // NotFound when it was never written, DataLoss when torn or of the wrong size.
  absl::Status CheckVectorPage(const uint8_t* page, uint64_t page_no, uint64_t owner, uint32_t seq,
                               uint64_t id) const;
  // The checked slot page `page_no` as read (`page`) or, when that copy is torn, as read again
  // into `reread`; the check's error when it stays torn.
  absl::StatusOr<const uint8_t*> SettledSlotPage(const uint8_t* page, uint64_t page_no,
                                                 uint64_t first_id, std::vector<uint8_t>& reread)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<File> file_;  // Buffered read/write handle of the writer.
  const std::string path_;
  const uint32_t dim_;
  const uint32_t slots_;              // 0: large vectors.
  const uint32_t pages_per_;          // Pages per vector (1 for small).
  std::atomic<uint64_t> file_pages_;  // Whole pages written out.
  std::unique_ptr<BlockReader> reader_;
  IoBackend io_ = IoBackend::kAuto;
  // Regions (see the file comment); set at open, then constant.
  uint64_t base_id_ = 0;
  uint64_t packed_first_page_ = 0;
  uint64_t direct_first_page_ = 0;
  std::vector<uint64_t> packed_ids_;  // ascending
  absl::Mutex mu_;
  // Pages not yet written out: page number -> page bytes (header sealed at write-out).
  std::map<uint64_t, DirtyPageBuf> dirty_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_PAGES_VECTOR_FILE_H_
