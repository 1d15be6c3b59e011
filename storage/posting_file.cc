#include "storage/posting_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace shoal::storage {
namespace {

absl::Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

// pwrite all of [data, data + n) at `offset`; returns 0 or an errno.
int WriteFully(int fd, const uint8_t* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return 0;
}

}  // namespace

PostingFileWriter::PostingFileWriter(int fd, std::string path, uint64_t next_page)
    : fd_(fd), path_(std::move(path)), next_page_(next_page) {}

PostingFileWriter::~PostingFileWriter() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<PostingFileWriter>> PostingFileWriter::Create(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create", path, errno);
  return std::unique_ptr<PostingFileWriter>(new PostingFileWriter(fd, path, 0));
}

absl::StatusOr<std::unique_ptr<PostingFileWriter>> PostingFileWriter::OpenForAppend(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus("stat", path, err);
  }
  const uint64_t pages = (static_cast<uint64_t>(st.st_size) + kPageSize - 1) / kPageSize;
  return std::unique_ptr<PostingFileWriter>(new PostingFileWriter(fd, path, pages));
}

absl::StatusOr<Extent> PostingFileWriter::Append(uint64_t posting_id,
                                                 std::span<const uint8_t> payload) {
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
    SealPage(page, PageKind::kPosting, posting_id, i, n);
  }
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": writer failed earlier: ", failed_.message()));
  }
  Extent e{next_page_, pages, static_cast<uint32_t>(payload.size())};
  if (int err = WriteFully(fd_, buf.data(), buf.size(), next_page_ * kPageSize); err != 0) {
    failed_ = ErrnoStatus("write", path_, err);
    return failed_;
  }
  next_page_ += pages;
  return e;
}

absl::Status PostingFileWriter::Sync() {
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  if (::fdatasync(fd_) != 0) {
    // After a failed fsync the kernel may have dropped the dirty pages: never trust the file.
    failed_ = ErrnoStatus("fdatasync", path_, errno);
    return failed_;
  }
  return absl::OkStatus();
}

uint64_t PostingFileWriter::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return next_page_ * kPageSize;
}

absl::Status DecodePosting(std::span<const uint8_t> pages, const Extent& extent,
                           uint64_t posting_id, const std::string& path,
                           std::vector<uint8_t>* out) {
  if (pages.size() != static_cast<size_t>(extent.num_pages) * kPageSize ||
      extent.num_pages != PostingPages(extent.bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": posting ", posting_id, ": ", pages.size(), " bytes do not match extent of ",
        extent.num_pages, " pages for ", extent.bytes, " payload bytes"));
  }
  out->reserve(out->size() + extent.bytes);
  for (uint32_t i = 0; i < extent.num_pages; ++i) {
    const uint8_t* page = pages.data() + static_cast<size_t>(i) * kPageSize;
    const uint64_t offset = (extent.first_page + i) * kPageSize;
    if (absl::Status s = CheckPage(page, PageKind::kPosting, posting_id, i, path, offset);
        !s.ok()) {
      return s;
    }
    const size_t expected =
        std::min<size_t>(kPagePayload, extent.bytes - static_cast<size_t>(i) * kPagePayload);
    if (PagePayloadBytes(page) != expected) {
      return absl::DataLossError(absl::StrCat(path, ": page at offset ", offset, ": payload size ",
                                              PagePayloadBytes(page), ", expected ", expected,
                                              " (posting ", posting_id, ")"));
    }
    out->insert(out->end(), page + kPageHeader, page + kPageHeader + expected);
  }
  return absl::OkStatus();
}

}  // namespace shoal::storage
