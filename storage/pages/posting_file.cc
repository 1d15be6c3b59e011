#include "storage/pages/posting_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace shoal::storage {

PostingFileWriter::PostingFileWriter(std::unique_ptr<File> file, uint64_t next_page)
    : file_(std::move(file)), path_(file_->path()), next_page_(next_page) {}

PostingFileWriter::~PostingFileWriter() = default;

absl::StatusOr<std::unique_ptr<PostingFileWriter>> PostingFileWriter::Create(
    const std::string& path, FileSystem* fs) {
  absl::StatusOr<std::unique_ptr<File>> file = fs->Open(path, OpenMode::kCreate);
  if (!file.ok()) return file.status();
  return std::unique_ptr<PostingFileWriter>(new PostingFileWriter(*std::move(file), 0));
}

absl::StatusOr<std::unique_ptr<PostingFileWriter>> PostingFileWriter::OpenForAppend(
    const std::string& path, FileSystem* fs) {
  absl::StatusOr<std::unique_ptr<File>> file = fs->Open(path, OpenMode::kExisting);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  const uint64_t pages = (*size + kPageSize - 1) / kPageSize;
  return std::unique_ptr<PostingFileWriter>(new PostingFileWriter(*std::move(file), pages));
}

absl::StatusOr<Extent> PostingFileWriter::Append(uint64_t posting_id,
                                                 std::span<const uint8_t> payload) {
  return Write(std::nullopt, posting_id, payload, 0);
}

absl::StatusOr<Extent> PostingFileWriter::WriteAt(uint64_t first_page, uint64_t posting_id,
                                                  std::span<const uint8_t> payload,
                                                  uint32_t first_sequence) {
  return Write(first_page, posting_id, payload, first_sequence);
}

absl::StatusOr<Extent> PostingFileWriter::Write(std::optional<uint64_t> first_page,
                                                uint64_t posting_id,
                                                std::span<const uint8_t> payload,
                                                uint32_t first_sequence) {
  if (payload.size() >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("posting ", posting_id, ": payload of ", payload.size(), " bytes >= 4 GiB"));
  }
  const uint32_t pages = PostingPages(payload.size());
  // Built in memory and written with one pwrite; the buffer is reused across appends.
  thread_local std::vector<uint8_t> buf;
  buf.resize(static_cast<size_t>(pages) * kPageSize);
  for (uint32_t i = 0; i < pages; ++i) {
    uint8_t* page = buf.data() + static_cast<size_t>(i) * kPageSize;
    const size_t begin = static_cast<size_t>(i) * kPagePayload;
    const size_t n = std::min(kPagePayload, payload.size() - std::min(begin, payload.size()));
    if (n > 0) std::memcpy(page + kPageHeader, payload.data() + begin, n);
    SealPage(page, PageKind::kPosting, posting_id, first_sequence + i, n);
  }
  absl::MutexLock lock(&mu_);
  Extent e{first_page.value_or(next_page_), pages, static_cast<uint32_t>(payload.size())};
  // A failed (maybe torn) write leaves next_page_ where it was: an Append after it overwrites
  // whatever reached the file past the end.
  if (absl::Status s = file_->Write(e.first_page * kPageSize, buf); !s.ok()) return s;
  next_page_ = std::max(next_page_, e.first_page + pages);
  return e;
}

absl::Status PostingFileWriter::Sync() {
  absl::MutexLock lock(&mu_);
  // After a failed fsync the kernel may have dropped the pages written since the last good one:
  // the caller writes what it needs again (see the class comment).
  return file_->Sync();
}

uint64_t PostingFileWriter::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return next_page_ * kPageSize;
}

absl::Status DecodePosting(std::span<const uint8_t> pages, const Extent& extent,
                           uint64_t posting_id, const std::string& path,
                           std::vector<uint8_t>* out) {
  if (pages.size() != static_cast<size_t>(extent.num_pages) * kPageSize ||
      extent.num_pages < PostingPages(extent.bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": posting ", posting_id, ": ", pages.size(), " bytes do not match extent of ",
        extent.num_pages, " pages for ", extent.bytes, " payload bytes"));
  }
  out->reserve(out->size() + extent.bytes);
  size_t total = 0;
  for (uint32_t i = 0; i < extent.num_pages; ++i) {
    const uint8_t* page = pages.data() + static_cast<size_t>(i) * kPageSize;
    const uint64_t offset = (extent.first_page + i) * kPageSize;
    if (absl::Status s = CheckPage(page, PageKind::kPosting, posting_id, i, path, offset);
        !s.ok()) {
      return s;
    }
    // Pages are full but where an append began (partly filled); only the empty posting's
    // single page is empty.
    const size_t n = PagePayloadBytes(page);
    if (total + n > extent.bytes || (n == 0 && extent.bytes > 0)) {
      return absl::DataLossError(absl::StrCat(path, ": page at offset ", offset, ": payload size ",
                                              n, " after ", total, " of ", extent.bytes,
                                              " bytes (posting ", posting_id, ")"));
    }
    out->insert(out->end(), page + kPageHeader, page + kPageHeader + n);
    total += n;
  }
  if (total != extent.bytes) {
    return absl::DataLossError(absl::StrCat(path, ": posting ", posting_id, ": pages at offset ",
                                            extent.first_page * kPageSize, " hold ", total,
                                            " payload bytes, its row says ", extent.bytes));
  }
  return absl::OkStatus();
}

}  // namespace shoal::storage
