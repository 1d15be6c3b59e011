// The posting file: each posting's payload stored as an extent of whole 4 KiB pages. The payload
// is cut into kPagePayload-byte pieces, each sealed in its own page (page_format.h; owner = the
// posting id, sequence = the page's index within the posting); a posting's pages are contiguous.
// An empty payload still takes one page, so every extent can be read and checked. An online
// insert may append to a posting: more pages right after its extent (WriteAt with the next
// sequence), the last page before them left partly filled — each page says how many payload
// bytes it holds, and the payload is their concatenation (so num_pages >= PostingPages(bytes)).
//
// The posting directory (posting -> extent) lives in RocksDB and is written by the index after
// Sync(); pages are written only where no committed directory row points (free pages, or the
// pages after a posting's extent that the updater keeps for its appends).
//
//   SHOAL_ASSIGN_OR_RETURN(auto w, PostingFileWriter::Create(path));
//   SHOAL_ASSIGN_OR_RETURN(Extent e, w->Append(posting_id, payload));
//   SHOAL_RETURN_IF_ERROR(w->Sync());
//   ... later, through a BlockReader of the same path:
//   reader->ReadBatch({ExtentRequest(e)}, [&](size_t, std::span<const uint8_t> pages) {
//     return DecodePosting(pages, e, posting_id, reader->path(), &payload);
//   });
#ifndef SHOAL_STORAGE_PAGES_POSTING_FILE_H_
#define SHOAL_STORAGE_PAGES_POSTING_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
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

// Where a posting lives: pages [first_page, first_page + num_pages) holding `bytes` of payload.
struct Extent {
  uint64_t first_page = 0;
  uint32_t num_pages = 0;
  uint32_t bytes = 0;
};

inline bool operator==(const Extent& a, const Extent& b) {
  return a.first_page == b.first_page && a.num_pages == b.num_pages && a.bytes == b.bytes;
}

// Pages a payload of `bytes` takes (at least one).
inline uint32_t PostingPages(uint64_t bytes) {
  return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + kPagePayload - 1) / kPagePayload);
}

// The read that fetches an extent.
inline ReadRequest ExtentRequest(const Extent& e) {
  return {e.first_page * kPageSize, e.num_pages * static_cast<uint32_t>(kPageSize)};
}

// Appends postings to one file through the FileSystem seam (buffered writes). Thread-safe (calls
// are serialised). Data is durable only after Sync() returns OK.
//
// Failures do not latch: a failed write leaves the pages it was given in an unknown state (torn,
// old or new) and a failed Sync leaves every page written since the last good Sync unknown (the
// kernel may have dropped them). Those are pages no committed directory row names (see above), so
// the caller treats them as garbage — free pages again — and writes what it needs anew, to pages
// it owns, before a Sync that succeeds (SpannUpdater: a failed change frees its pages and the
// retry rewrites the postings). Writes resume as soon as the file system accepts them.
class PostingFileWriter {
 public:
  // Creates or truncates `path`. Internal on I/O errors. `fs` is not owned.
  static absl::StatusOr<std::unique_ptr<PostingFileWriter>> Create(
      const std::string& path, FileSystem* fs = FileSystem::Default());
  // Opens an existing file and appends after its last whole page (a torn partial page at the
  // end, left by a crash, is skipped, never overwritten). NotFound if it does not exist.
  static absl::StatusOr<std::unique_ptr<PostingFileWriter>> OpenForAppend(
      const std::string& path, FileSystem* fs = FileSystem::Default());
  ~PostingFileWriter();

  // Writes `payload` as a new extent at the end of the file. InvalidArgument if the payload is
  // 4 GiB or more; Internal / ResourceExhausted (ENOSPC) naming the file on write errors (the
  // extent's pages are then unknown; the end of the file does not move past them).
  absl::StatusOr<Extent> Append(uint64_t posting_id, std::span<const uint8_t> payload);
  // Writes `payload` as an extent starting at page `first_page` (pages the caller owns: free or
  // past the end; online updates rewrite postings copy-on-write this way), its pages numbered
  // from `first_sequence` (an append continues a posting's numbering). Errors as Append.
  absl::StatusOr<Extent> WriteAt(uint64_t first_page, uint64_t posting_id,
                                 std::span<const uint8_t> payload, uint32_t first_sequence = 0);
  // fdatasync: every extent returned so far is durable. After a failure, the extents written
  // since the last good Sync are not (File::Sync): write them again before trusting them.
  absl::Status Sync();
  // Bytes of the file including everything appended (a multiple of kPageSize).
  uint64_t size_bytes() const;
  const std::string& path() const { return path_; }

 private:
  PostingFileWriter(std::unique_ptr<File> file, uint64_t next_page);
  // Writes at `first_page`, or at the end when nullopt.
  absl::StatusOr<Extent> Write(std::optional<uint64_t> first_page, uint64_t posting_id,
                               std::span<const uint8_t> payload, uint32_t first_sequence);

  const std::unique_ptr<File> file_;
  const std::string path_;
  mutable absl::Mutex mu_;
  uint64_t next_page_ ABSL_GUARDED_BY(mu_);
};

// Checks every page of `pages` (the extent as read: extent.num_pages * kPageSize bytes from file
// offset extent.first_page * kPageSize) and appends the payload to *out. DataLoss naming `path`
// and the page's file offset when a page is corrupt, belongs elsewhere or the pages' payloads do
// not add up to extent.bytes; InvalidArgument when `pages` has the wrong size for the extent.
absl::Status DecodePosting(std::span<const uint8_t> pages, const Extent& extent,
                           uint64_t posting_id, const std::string& path, std::vector<uint8_t>* out);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_PAGES_POSTING_FILE_H_
