#include "storage/vector_file.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/page_format.h"

namespace shoal::storage {
namespace {

constexpr size_t kMaxDirtyPages = 4096;  // 16 MiB buffered before a write-out.

uint32_t BitmapBytes(uint32_t slots) { return slots > 1 ? (slots + 7) / 8 : 0; }

}  // namespace

uint32_t VectorFile::SlotsPerPage(uint32_t dim) {
  const size_t vec = 4 * static_cast<size_t>(dim);
  uint32_t s = static_cast<uint32_t>(kPagePayload / vec);
  while (s > 1 && s * vec + BitmapBytes(s) > kPagePayload) --s;
  return s;
}

uint32_t VectorFile::PagesPerVector(uint32_t dim) {
  const size_t vec = 4 * static_cast<size_t>(dim);
  return vec <= kPagePayload ? 1 : static_cast<uint32_t>((vec + kPagePayload - 1) / kPagePayload);
}

VectorFile::VectorFile(std::unique_ptr<File> file, uint32_t dim, uint64_t file_pages,
                       std::unique_ptr<BlockReader> reader)
    : file_(std::move(file)),
      path_(file_->path()),
      dim_(dim),
      slots_(SlotsPerPage(dim)),
      pages_per_(PagesPerVector(dim)),
      file_pages_(file_pages),
      reader_(std::move(reader)) {}

VectorFile::~VectorFile() = default;

absl::StatusOr<std::unique_ptr<VectorFile>> VectorFile::Create(const std::string& path,
                                                               uint32_t dim, IoBackend io,
                                                               FileSystem* fs) {
  return Make(path, dim, io, fs, /*create=*/true);
}

absl::StatusOr<std::unique_ptr<VectorFile>> VectorFile::Open(const std::string& path, uint32_t dim,
                                                             IoBackend io, FileSystem* fs) {
  return Make(path, dim, io, fs, /*create=*/false);
}

absl::StatusOr<std::unique_ptr<VectorFile>> VectorFile::Make(const std::string& path, uint32_t dim,
                                                             IoBackend io, FileSystem* fs,
                                                             bool create) {
  if (dim == 0 || dim > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("vector file ", path, ": bad dim ", dim));
  }
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         fs->Open(path, create ? OpenMode::kCreate : OpenMode::kExisting));
  SHOAL_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<BlockReader> reader, BlockReader::Open(path, io));
  // A torn partial page at the end (crash mid-write) is ignored: its ids read as NotFound.
  const uint64_t pages = size / kPageSize;
  return std::unique_ptr<VectorFile>(
      new VectorFile(std::move(file), dim, pages, std::move(reader)));
}

uint32_t VectorFile::PayloadBytes(uint32_t piece) const {
  const size_t vec = 4 * static_cast<size_t>(dim_);
  if (slots_ > 0) return static_cast<uint32_t>(slots_ * vec + BitmapBytes(slots_));
  return static_cast<uint32_t>(std::min(kPagePayload, vec - piece * kPagePayload));
}

absl::StatusOr<uint8_t*> VectorFile::DirtyPage(uint64_t page, bool load) {
  auto it = dirty_.find(page);
  if (it != dirty_.end()) return it->second.get();
  auto buf = std::make_unique<uint8_t[]>(kPageSize);
  std::memset(buf.get(), 0, kPageSize);
  if (load && page < file_pages_.load(std::memory_order_relaxed)) {
    SHOAL_ASSIGN_OR_RETURN(size_t n, file_->Read(page * kPageSize, {buf.get(), kPageSize}));
    if (n == kPageSize && !PageIsZero(buf.get())) {
      if (absl::Status s =
              CheckPage(buf.get(), PageKind::kVector, page, 0, path_, page * kPageSize);
          !s.ok()) {
        return s;
      }
    } else {
      std::memset(buf.get(), 0, kPageSize);
    }
  }
  uint8_t* p = buf.get();
  dirty_.emplace(page, std::move(buf));
  return p;
}

absl::Status VectorFile::Put(uint64_t id, const float* vector) {
  if (id > kMaxId) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": vector id ", id, " > ", kMaxId));
  }
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  const size_t vec = 4 * static_cast<size_t>(dim_);
  const auto* src = reinterpret_cast<const uint8_t*>(vector);
  if (slots_ > 0) {
    const uint64_t page_no = id / slots_;
    const uint32_t slot = static_cast<uint32_t>(id % slots_);
    absl::StatusOr<uint8_t*> page = DirtyPage(page_no, /*load=*/slots_ > 1);
    if (!page.ok()) return page.status();
    uint8_t* payload = *page + kPageHeader;
    std::memcpy(payload + slot * vec, src, vec);
    if (slots_ > 1) payload[slots_ * vec + slot / 8] |= static_cast<uint8_t>(1u << (slot % 8));
  } else {
    for (uint32_t piece = 0; piece < pages_per_; ++piece) {
      absl::StatusOr<uint8_t*> page = DirtyPage(id * pages_per_ + piece, /*load=*/false);
      if (!page.ok()) return page.status();
      std::memcpy(*page + kPageHeader, src + piece * kPagePayload, PayloadBytes(piece));
    }
  }
  if (dirty_.size() >= kMaxDirtyPages) return Flush();
  return absl::OkStatus();
}

absl::Status VectorFile::Flush() {
  // Seal, then write each run of consecutive dirty pages with one pwrite.
  std::vector<uint8_t> run;
  uint64_t run_start = 0, max_page = 0;
  auto write_run = [&]() -> absl::Status {
    if (absl::Status s = file_->Write(run_start * kPageSize, run); !s.ok()) return failed_ = s;
    run.clear();
    return absl::OkStatus();
  };
  for (auto& [page_no, page] : dirty_) {
    if (slots_ > 0) {
      SealPage(page.get(), PageKind::kVector, page_no, 0, PayloadBytes(0));
    } else {
      const uint32_t piece = static_cast<uint32_t>(page_no % pages_per_);
      SealPage(page.get(), PageKind::kVector, page_no / pages_per_, piece, PayloadBytes(piece));
    }
    if (!run.empty() && page_no != run_start + run.size() / kPageSize) {
      if (absl::Status s = write_run(); !s.ok()) return s;
    }
    if (run.empty()) run_start = page_no;
    run.insert(run.end(), page.get(), page.get() + kPageSize);
    max_page = page_no;
  }
  if (!run.empty()) {
    if (absl::Status s = write_run(); !s.ok()) return s;
  }
  if (!dirty_.empty() && max_page + 1 > file_pages_.load()) file_pages_.store(max_page + 1);
  dirty_.clear();
  return absl::OkStatus();
}

absl::Status VectorFile::Sync() {
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  if (absl::Status s = Flush(); !s.ok()) return s;
  if (absl::Status s = file_->Sync(); !s.ok()) return failed_ = s;
  return absl::OkStatus();
}

uint64_t VectorFile::bytes_read() const { return reader_->bytes_read(); }

absl::Status VectorFile::ReadBatch(std::span<const uint64_t> ids, const VectorCallback& on_vector) {
  const uint64_t file_pages = file_pages_.load();
  // (first page, index into ids), sorted so that ids sharing a page form one group and the
  // reads go out in file order.
  std::vector<std::pair<uint64_t, size_t>> order(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] > kMaxId) {
      return absl::NotFoundError(absl::StrCat(path_, ": vector ", ids[i], " not found"));
    }
    const uint64_t first = slots_ > 0 ? ids[i] / slots_ : ids[i] * pages_per_;
    if (first + pages_per_ > file_pages) {
      return absl::NotFoundError(absl::StrCat(path_, ": vector ", ids[i], " not found"));
    }
    order[i] = {first, i};
  }
  std::sort(order.begin(), order.end());
  std::vector<ReadRequest> requests;
  std::vector<size_t> group_begin;  // Into `order`; one group per request, plus an end mark.
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || order[i].first != order[i - 1].first) {
      requests.push_back(
          {order[i].first * kPageSize, pages_per_ * static_cast<uint32_t>(kPageSize)});
      group_begin.push_back(i);
    }
  }
  group_begin.push_back(order.size());

  auto check = [&](const uint8_t* page, uint64_t page_no, uint64_t owner, uint32_t seq,
                   uint64_t id) -> absl::Status {
    absl::Status s = CheckPage(page, PageKind::kVector, owner, seq, path_, page_no * kPageSize);
    if (!s.ok() && PageIsZero(page)) {
      return absl::NotFoundError(absl::StrCat(path_, ": vector ", id, " not found"));
    }
    if (s.ok() && PagePayloadBytes(page) != PayloadBytes(seq)) {
      return absl::DataLossError(absl::StrCat(path_, ": page at offset ", page_no * kPageSize,
                                              ": payload size ", PagePayloadBytes(page),
                                              ", expected ", PayloadBytes(seq), " for dim ", dim_));
    }
    return s;
  };
  const size_t vec = 4 * static_cast<size_t>(dim_);
  std::vector<float> joined(slots_ > 0 ? 0 : dim_);  // A large vector, put back together.
  return reader_->ReadBatch(requests, [&](size_t r, std::span<const uint8_t> bytes) {
    const uint64_t page_no = requests[r].offset / kPageSize;
    if (slots_ > 0) {
      const uint64_t first_id = ids[order[group_begin[r]].second];
      const uint8_t* page = bytes.data();
      absl::Status s = check(page, page_no, page_no, 0, first_id);
      // A page holding several slots is rewritten in place when a later id joins it; a read
      // racing with that write may see it torn. Its checksum tells, and a re-read settles it.
      thread_local std::vector<uint8_t> reread;
      for (int attempt = 0; absl::IsDataLoss(s) && slots_ > 1 && attempt < 3; ++attempt) {
        reread.resize(kPageSize);
        absl::StatusOr<size_t> n = file_->Read(page_no * kPageSize, {reread.data(), kPageSize});
        if (!n.ok() || *n != kPageSize) break;
        page = reread.data();
        s = check(page, page_no, page_no, 0, first_id);
      }
      if (!s.ok()) return s;
      const uint8_t* payload = page + kPageHeader;
      for (size_t g = group_begin[r]; g < group_begin[r + 1]; ++g) {
        const size_t i = order[g].second;
        const uint32_t slot = static_cast<uint32_t>(ids[i] % slots_);
        if (slots_ > 1 && !(payload[slots_ * vec + slot / 8] & (1u << (slot % 8)))) {
          return absl::NotFoundError(absl::StrCat(path_, ": vector ", ids[i], " not found"));
        }
        // Slots start 4-byte aligned in an aligned page buffer.
        auto* v = reinterpret_cast<const float*>(payload + slot * vec);
        if (absl::Status s = on_vector(i, v); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    const uint64_t id = page_no / pages_per_;
    auto* dst = reinterpret_cast<uint8_t*>(joined.data());
    for (uint32_t piece = 0; piece < pages_per_; ++piece) {
      const uint8_t* page = bytes.data() + piece * kPageSize;
      if (absl::Status s = check(page, page_no + piece, id, piece, id); !s.ok()) return s;
      std::memcpy(dst + piece * kPagePayload, page + kPageHeader, PayloadBytes(piece));
    }
    for (size_t g = group_begin[r]; g < group_begin[r + 1]; ++g) {
      if (absl::Status s = on_vector(order[g].second, joined.data()); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

}  // namespace shoal::storage
