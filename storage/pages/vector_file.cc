#include "storage/pages/vector_file.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/pages/page_format.h"

namespace shoal::storage {
namespace {

constexpr size_t kMaxDirtyPages = 4096;  // 16 MiB buffered before a write-out.
constexpr uint32_t kHeaderVersion = 1;
// Header payload: version u32, dim u32, base_id, packed_count, packed_first_page,
// table_first_page, direct_first_page (u64 each, little-endian).
constexpr size_t kHeaderBytes = 8 + 5 * 8;

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
  auto vf =
      std::unique_ptr<VectorFile>(new VectorFile(std::move(file), dim, pages, std::move(reader)));
  vf->io_ = io;
  if (!create) SHOAL_RETURN_IF_ERROR(vf->ReadHeader());
  return vf;
}

void VectorFile::SealHeader(uint8_t* page, uint32_t dim, const Header& h) {
  std::memset(page, 0, kPageSize);
  uint8_t* p = page + kPageHeader;
  const uint32_t head[2] = {kHeaderVersion, dim};
  const uint64_t fields[5] = {h.base_id, h.packed_count, h.packed_first_page, h.table_first_page,
                              h.direct_first_page};
  std::memcpy(p, head, sizeof(head));
  std::memcpy(p + sizeof(head), fields, sizeof(fields));
  SealPage(page, PageKind::kVectorHeader, 0, 0, kHeaderBytes);
}

absl::Status VectorFile::ReadHeader() {
  const uint64_t pages = file_pages_.load();
  if (pages == 0) return absl::OkStatus();
  auto page = std::make_unique<uint8_t[]>(kPageSize);
  SHOAL_ASSIGN_OR_RETURN(size_t n, file_->Read(0, {page.get(), kPageSize}));
  uint32_t magic = 0;
  if (n == kPageSize) std::memcpy(&magic, page.get() + 4, sizeof(magic));
  if (magic != static_cast<uint32_t>(PageKind::kVectorHeader)) return absl::OkStatus();
  SHOAL_RETURN_IF_ERROR(CheckPage(page.get(), PageKind::kVectorHeader, 0, 0, path_, 0));
  uint32_t head[2];
  uint64_t f[5];
  std::memcpy(head, page.get() + kPageHeader, sizeof(head));
  std::memcpy(f, page.get() + kPageHeader + sizeof(head), sizeof(f));
  const Header h{f[0], f[1], f[2], f[3], f[4]};
  const uint64_t packed_pages =
      slots_ > 0 ? (h.packed_count + slots_ - 1) / slots_ : h.packed_count * pages_per_;
  const uint64_t table_pages = (h.packed_count + kIdsPerTablePage - 1) / kIdsPerTablePage;
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path_, ": header page: ", what));
  };
  if (head[0] != kHeaderVersion) return bad(absl::StrCat("unknown version ", head[0]));
  if (head[1] != dim_) return bad(absl::StrCat("dim ", head[1], ", expected ", dim_));
  if (h.packed_first_page != 1 || h.table_first_page != 1 + packed_pages ||
      h.direct_first_page != h.table_first_page + table_pages || h.direct_first_page > pages ||
      h.base_id > kMaxId + 1) {
    return bad("region offsets do not match the packed count (or the file is short)");
  }
  packed_ids_.resize(h.packed_count);
  for (uint64_t t = 0; t < table_pages; ++t) {
    const uint64_t at = (h.table_first_page + t) * kPageSize;
    SHOAL_ASSIGN_OR_RETURN(n, file_->Read(at, {page.get(), kPageSize}));
    if (n != kPageSize) return bad("id table cut short");
    SHOAL_RETURN_IF_ERROR(
        CheckPage(page.get(), PageKind::kVectorTable, 0, static_cast<uint32_t>(t), path_, at));
    const size_t count =
        std::min<uint64_t>(kIdsPerTablePage, h.packed_count - t * kIdsPerTablePage);
    if (PagePayloadBytes(page.get()) != count * 8) return bad("id table page size");
    std::memcpy(packed_ids_.data() + t * kIdsPerTablePage, page.get() + kPageHeader, count * 8);
  }
  for (size_t i = 1; i < packed_ids_.size(); ++i) {
    if (packed_ids_[i] <= packed_ids_[i - 1]) return bad("id table not ascending");
  }
  base_id_ = h.base_id;
  packed_first_page_ = h.packed_first_page;
  direct_first_page_ = h.direct_first_page;
  return absl::OkStatus();
}

bool VectorFile::Locate(uint64_t id, Slot* where) const {
  uint64_t index, first;
  auto it = std::lower_bound(packed_ids_.begin(), packed_ids_.end(), id);
  if (it != packed_ids_.end() && *it == id) {
    index = static_cast<uint64_t>(it - packed_ids_.begin());
    first = packed_first_page_;
  } else if (id >= base_id_ && id <= kMaxId) {
    index = id - base_id_;
    first = direct_first_page_;
  } else {
    return false;
  }
  if (slots_ > 0) {
    where->page = first + index / slots_;
    where->slot = static_cast<uint32_t>(index % slots_);
    where->owner = where->page;
  } else {
    where->page = first + index * pages_per_;
    where->slot = 0;
    where->owner = id;
  }
  return true;
}

uint64_t VectorFile::SlotCapacity() const {
  const uint64_t pages = file_pages_.load();
  const uint64_t direct = pages > direct_first_page_ ? pages - direct_first_page_ : 0;
  return packed_ids_.size() + (slots_ > 0 ? direct * slots_ : direct / pages_per_);
}

uint64_t VectorFile::size_bytes() const { return file_pages_.load() * kPageSize; }

uint32_t VectorFile::PayloadBytes(uint32_t piece) const {
  const size_t vec = 4 * static_cast<size_t>(dim_);
  if (slots_ > 0) return static_cast<uint32_t>(slots_ * vec + BitmapBytes(slots_));
  return static_cast<uint32_t>(std::min(kPagePayload, vec - piece * kPagePayload));
}

absl::StatusOr<uint8_t*> VectorFile::DirtyPage(uint64_t page, uint64_t owner, uint32_t sequence,
                                               bool load) {
  auto it = dirty_.find(page);
  if (it != dirty_.end()) return it->second.bytes.get();
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(kPageSize);  // zeroed once, here
  std::memset(buf.get(), 0, kPageSize);
  if (load && page < file_pages_.load(std::memory_order_relaxed)) {
    SHOAL_ASSIGN_OR_RETURN(size_t n, file_->Read(page * kPageSize, {buf.get(), kPageSize}));
    if (n == kPageSize && !PageIsZero(buf.get())) {
      if (absl::Status s =
              CheckPage(buf.get(), PageKind::kVector, owner, sequence, path_, page * kPageSize);
          !s.ok()) {
        return s;
      }
    } else {
      std::memset(buf.get(), 0, kPageSize);
    }
  }
  uint8_t* p = buf.get();
  dirty_.emplace(page, DirtyPageBuf{std::move(buf), owner, sequence});
  return p;
}

absl::Status VectorFile::Put(uint64_t id, const float* vector) {
  if (id > kMaxId) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": vector id ", id, " > ", kMaxId));
  }
  Slot where;
  if (!Locate(id, &where)) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": vector id ", id,
                                                      " is below the compacted base ", base_id_,
                                                      " and was not kept: it cannot be written"));
  }
  absl::MutexLock lock(&mu_);
  const size_t vec = 4 * static_cast<size_t>(dim_);
  const auto* src = reinterpret_cast<const uint8_t*>(vector);
  if (slots_ > 0) {
    const uint32_t slot = where.slot;
    absl::StatusOr<uint8_t*> page = DirtyPage(where.page, where.owner, 0, /*load=*/slots_ > 1);
    if (!page.ok()) return page.status();
    uint8_t* payload = *page + kPageHeader;
    std::memcpy(payload + slot * vec, src, vec);
    if (slots_ > 1) payload[slots_ * vec + slot / 8] |= static_cast<uint8_t>(1u << (slot % 8));
  } else {
    for (uint32_t piece = 0; piece < pages_per_; ++piece) {
      absl::StatusOr<uint8_t*> page =
          DirtyPage(where.page + piece, where.owner, piece, /*load=*/false);
      if (!page.ok()) return page.status();
      std::memcpy(*page + kPageHeader, src + piece * kPagePayload, PayloadBytes(piece));
    }
  }
  if (dirty_.size() >= kMaxDirtyPages) return Flush(/*keep=*/false);
  return absl::OkStatus();
}

absl::Status VectorFile::Flush(bool keep) {
  // Seal, then write each run of consecutive dirty pages with one pwrite. A failed write returns
  // with every page still buffered: the next Flush writes them all again (a torn page too).
  std::vector<uint8_t> run;
  run.reserve(dirty_.size() * kPageSize);  // each page copied once, not again at every doubling
  uint64_t run_start = 0, max_page = 0;
  auto write_run = [&]() -> absl::Status {
    SHOAL_RETURN_IF_ERROR(file_->Write(run_start * kPageSize, run));
    run.clear();
    return absl::OkStatus();
  };
  for (auto& [page_no, dirty] : dirty_) {
    uint8_t* page = dirty.bytes.get();
    SealPage(page, PageKind::kVector, dirty.owner, dirty.sequence, PayloadBytes(dirty.sequence));
    if (!run.empty() && page_no != run_start + run.size() / kPageSize) {
      if (absl::Status s = write_run(); !s.ok()) return s;
    }
    if (run.empty()) run_start = page_no;
    run.insert(run.end(), page, page + kPageSize);
    max_page = page_no;
  }
  if (!run.empty()) {
    if (absl::Status s = write_run(); !s.ok()) return s;
  }
  if (!dirty_.empty() && max_page + 1 > file_pages_.load()) file_pages_.store(max_page + 1);
  if (!keep) dirty_.clear();
  return absl::OkStatus();
}

bool VectorFile::CopyBufferedPage(uint64_t page_no, uint8_t* out) {
  absl::MutexLock lock(&mu_);
  auto it = dirty_.find(page_no);
  if (it == dirty_.end()) return false;
  std::memcpy(out, it->second.bytes.get(), kPageSize);
  SealPage(out, PageKind::kVector, it->second.owner, it->second.sequence,
           PayloadBytes(it->second.sequence));
  return true;
}

absl::Status VectorFile::Sync() {
  absl::MutexLock lock(&mu_);
  SHOAL_RETURN_IF_ERROR(Flush(/*keep=*/true));
  // After a failed fdatasync the written pages are not known to be durable (File::Sync): they
  // stay buffered, and the next Sync writes them again.
  SHOAL_RETURN_IF_ERROR(file_->Sync());
  dirty_.clear();
  return absl::OkStatus();
}

uint64_t VectorFile::bytes_read() const { return reader_->bytes_read(); }

absl::Status VectorFile::CheckVectorPage(const uint8_t* page, uint64_t page_no, uint64_t owner,
                                         uint32_t seq, uint64_t id) const {
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
}

absl::StatusOr<const uint8_t*> VectorFile::SettledSlotPage(const uint8_t* page, uint64_t page_no,
                                                           uint64_t first_id,
                                                           std::vector<uint8_t>& reread) {
  absl::Status s = CheckVectorPage(page, page_no, page_no, 0, first_id);
  // A page holding several slots is rewritten in place when a later id joins it; a read
  // racing with that write may see it torn. Its checksum tells, and a re-read settles it.
  for (int attempt = 0; absl::IsDataLoss(s) && slots_ > 1 && attempt < 3; ++attempt) {
    reread.resize(kPageSize);
    absl::StatusOr<size_t> n = file_->Read(page_no * kPageSize, {reread.data(), kPageSize});
    if (!n.ok() || *n != kPageSize) break;
    page = reread.data();
    s = CheckVectorPage(page, page_no, page_no, 0, first_id);
  }
  // Still torn: a write-out that failed part-way (the page stays buffered until a Sync makes
  // it durable; the buffered copy holds every slot the file had), or a slow one (over once
  // the copy has waited for the writer's lock: read once more).
  if (absl::IsDataLoss(s) && slots_ > 1) {
    reread.resize(kPageSize);
    bool again = CopyBufferedPage(page_no, reread.data());
    if (!again) {
      absl::StatusOr<size_t> n = file_->Read(page_no * kPageSize, {reread.data(), kPageSize});
      again = n.ok() && *n == kPageSize;
    }
    if (again) {
      page = reread.data();
      s = CheckVectorPage(page, page_no, page_no, 0, first_id);
    }
  }
  if (!s.ok()) return s;
  return page;
}

absl::Status VectorFile::ReadBatch(std::span<const uint64_t> ids, const VectorCallback& on_vector) {
  const uint64_t file_pages = file_pages_.load();
  // (first page, index into ids), sorted so that ids sharing a page form one group and the
  // reads go out in file order.
  std::vector<std::pair<uint64_t, size_t>> order(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    Slot where;
    if (!Locate(ids[i], &where) || where.page + pages_per_ > file_pages) {
      return absl::NotFoundError(absl::StrCat(path_, ": vector ", ids[i], " not found"));
    }
    order[i] = {where.page, i};
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

  const size_t vec = 4 * static_cast<size_t>(dim_);
  std::vector<float> joined(slots_ > 0 ? 0 : dim_);  // A large vector, put back together.
  return reader_->ReadBatch(requests, [&](size_t r, std::span<const uint8_t> bytes) {
    const uint64_t page_no = requests[r].offset / kPageSize;
    if (slots_ > 0) {
      const uint64_t first_id = ids[order[group_begin[r]].second];
      thread_local std::vector<uint8_t> reread;
      absl::StatusOr<const uint8_t*> page =
          SettledSlotPage(bytes.data(), page_no, first_id, reread);
      if (!page.ok()) return page.status();
      const uint8_t* payload = *page + kPageHeader;
      for (size_t g = group_begin[r]; g < group_begin[r + 1]; ++g) {
        const size_t i = order[g].second;
        Slot where;
        Locate(ids[i], &where);
        const uint32_t slot = where.slot;
        if (slots_ > 1 && !(payload[slots_ * vec + slot / 8] & (1u << (slot % 8)))) {
          return absl::NotFoundError(absl::StrCat(path_, ": vector ", ids[i], " not found"));
        }
        // Slots start 4-byte aligned in an aligned page buffer.
        auto* v = reinterpret_cast<const float*>(payload + slot * vec);
        if (absl::Status s = on_vector(i, v); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    const uint64_t id = ids[order[group_begin[r]].second];
    auto* dst = reinterpret_cast<uint8_t*>(joined.data());
    for (uint32_t piece = 0; piece < pages_per_; ++piece) {
      const uint8_t* page = bytes.data() + piece * kPageSize;
      if (absl::Status s = CheckVectorPage(page, page_no + piece, id, piece, id); !s.ok()) {
        return s;
      }
      std::memcpy(dst + piece * kPagePayload, page + kPageHeader, PayloadBytes(piece));
    }
    for (size_t g = group_begin[r]; g < group_begin[r + 1]; ++g) {
      if (absl::Status s = on_vector(order[g].second, joined.data()); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

}  // namespace shoal::storage
