// VectorFile: reading every vector back (Scan) and writing a compacted copy (WriteCompacted).
// See vector_file.h for the layout both follow.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/pages/vector_file.h"

namespace shoal::storage {
namespace {

constexpr uint64_t kScanChunkPages = 256;  // 1 MiB per read while scanning
constexpr size_t kWriteChunkBytes = 1 << 20;

// The pages of a file being written after its header page, in file order: each is filled in
// page(), sealed by Emit, and written out in chunks of kWriteChunkBytes.
class PageSink {
 public:
  explicit PageSink(File* file) : file_(file), page_(kPageSize, 0) {}

  // The page being filled (zeroed after each Emit).
  uint8_t* page() { return page_.data(); }
  std::span<const uint8_t> page_bytes() const { return page_; }

  // Seals page() with `bytes` of payload, queues it, and clears page() for the next one.
  absl::Status Emit(PageKind kind, uint64_t owner, uint32_t seq, size_t bytes) {
    SealPage(page_.data(), kind, owner, seq, bytes);
    out_.insert(out_.end(), page_.begin(), page_.end());
    std::fill(page_.begin(), page_.end(), 0);
    return out_.size() >= kWriteChunkBytes ? Flush() : absl::OkStatus();
  }

  // Writes the queued pages.
  absl::Status Flush() {
    if (out_.empty()) return absl::OkStatus();
    SHOAL_RETURN_IF_ERROR(file_->Write(out_first_ * kPageSize, out_));
    out_first_ += out_.size() / kPageSize;
    out_.clear();
    return absl::OkStatus();
  }

  // The first page not written yet (after a Flush: the file's length in pages).
  uint64_t next_page() const { return out_first_ + out_.size() / kPageSize; }

 private:
  File* const file_;
  std::vector<uint8_t> page_;
  std::vector<uint8_t> out_;  // sealed pages not yet written, starting at page out_first_
  uint64_t out_first_ = 1;    // the packed region follows the header page
};

// The table of kept ids (kind kVectorTable), kIdsPerTablePage ids per page.
absl::Status EmitIdTable(const std::vector<uint64_t>& kept, size_t ids_per_page, PageSink& sink) {
  for (size_t t = 0; t * ids_per_page < kept.size(); ++t) {
    const size_t n = std::min(ids_per_page, kept.size() - t * ids_per_page);
    std::memcpy(sink.page() + kPageHeader, kept.data() + t * ids_per_page, n * 8);
    SHOAL_RETURN_IF_ERROR(sink.Emit(PageKind::kVectorTable, 0, static_cast<uint32_t>(t), n * 8));
  }
  return absl::OkStatus();
}

}  // namespace

// Walks one region of the file (packed or direct) unit by unit — a unit is one page of slots, or
// the pages of one large vector — and yields the vectors present in it, ascending by id.
class VectorFile::RegionScan {
 public:
  RegionScan(VectorFile* f, bool packed, uint64_t first_page, uint64_t end_page)
      : f_(f),
        packed_(packed),
        first_(first_page),
        units_(end_page > first_page ? (end_page - first_page) / f->pages_per_ : 0),
        unit_bytes_(f->pages_per_ * kPageSize),
        joined_(f->slots_ > 0 ? 0 : f->dim_) {}

  // Moves to the next vector present; *more is false at the end.
  absl::Status Next(bool* more) {
    const size_t vec = 4 * static_cast<size_t>(f_->dim_);
    for (;;) {
      if (unit_ >= units_) {
        *more = false;
        return absl::OkStatus();
      }
      if (unit_ < chunk_first_ || unit_ >= chunk_first_ + chunk_units_) {
        SHOAL_RETURN_IF_ERROR(Load());
      }
      const uint8_t* u = chunk_.data() + (unit_ - chunk_first_) * unit_bytes_;
      const uint64_t page_no = first_ + unit_ * f_->pages_per_;
      if (f_->slots_ == 0) {  // one large vector per unit
        const uint64_t id = packed_ ? f_->packed_ids_[unit_] : f_->base_id_ + unit_;
        ++unit_;
        if (PageIsZero(u)) continue;  // never written
        auto* dst = reinterpret_cast<uint8_t*>(joined_.data());
        for (uint32_t piece = 0; piece < f_->pages_per_; ++piece) {
          const uint8_t* page = u + piece * kPageSize;
          SHOAL_RETURN_IF_ERROR(Check(page, page_no + piece, id, piece));
          std::memcpy(dst + piece * kPagePayload, page + kPageHeader, f_->PayloadBytes(piece));
        }
        id_ = id;
        vector_ = joined_.data();
        *more = true;
        return absl::OkStatus();
      }
      if (checked_ != unit_) {
        if (PageIsZero(u)) {
          ++unit_;
          continue;
        }
        SHOAL_RETURN_IF_ERROR(Check(u, page_no, page_no, 0));
        checked_ = unit_;
        slot_ = 0;
      }
      const uint8_t* payload = u + kPageHeader;
      for (; slot_ < f_->slots_; ++slot_) {
        const uint64_t index = unit_ * f_->slots_ + slot_;
        if (packed_ && index >= f_->packed_ids_.size()) break;
        if (f_->slots_ > 1 && !(payload[f_->slots_ * vec + slot_ / 8] & (1u << (slot_ % 8)))) {
          continue;
        }
        id_ = packed_ ? f_->packed_ids_[index] : f_->base_id_ + index;
        vector_ = reinterpret_cast<const float*>(payload + slot_ * vec);
        ++slot_;
        *more = true;
        return absl::OkStatus();
      }
      ++unit_;
    }
  }
  uint64_t id() const { return id_; }
  const float* vector() const { return vector_; }

 private:
  absl::Status Load() {
    chunk_first_ = unit_;
    chunk_units_ =
        std::min<uint64_t>(units_ - unit_, std::max<uint64_t>(1, kScanChunkPages / f_->pages_per_));
    chunk_.assign(chunk_units_ * unit_bytes_, 0);
    const uint64_t offset = (first_ + unit_ * f_->pages_per_) * kPageSize;
    // A short read (a torn tail) leaves zeros: those slots read as never written.
    SHOAL_ASSIGN_OR_RETURN(size_t n, f_->file_->Read(offset, {chunk_.data(), chunk_.size()}));
    (void)n;
    return absl::OkStatus();
  }
  absl::Status Check(const uint8_t* page, uint64_t page_no, uint64_t owner, uint32_t seq) {
    SHOAL_RETURN_IF_ERROR(
        CheckPage(page, PageKind::kVector, owner, seq, f_->path_, page_no * kPageSize));
    if (PagePayloadBytes(page) != f_->PayloadBytes(seq)) {
      return absl::DataLossError(absl::StrCat(f_->path_, ": page at offset ", page_no * kPageSize,
                                              ": payload size ", PagePayloadBytes(page)));
    }
    return absl::OkStatus();
  }

  VectorFile* const f_;
  const bool packed_;
  const uint64_t first_;
  const uint64_t units_;
  const size_t unit_bytes_;
  uint64_t unit_ = 0;
  uint64_t checked_ = ~uint64_t{0};  // the unit whose page was checked
  uint32_t slot_ = 0;                // next slot of that unit to look at
  std::vector<uint8_t> chunk_;
  uint64_t chunk_first_ = 0, chunk_units_ = 0;
  std::vector<float> joined_;
  uint64_t id_ = 0;
  const float* vector_ = nullptr;
};

absl::Status VectorFile::Scan(const IdVectorCallback& on_vector) {
  {
    absl::MutexLock lock(&mu_);
    SHOAL_RETURN_IF_ERROR(Flush(/*keep=*/true));  // buffered until a Sync makes them durable
  }
  const uint64_t packed_pages =
      slots_ > 0 ? (packed_ids_.size() + slots_ - 1) / slots_ : packed_ids_.size() * pages_per_;
  RegionScan packed(this, true, packed_first_page_, packed_first_page_ + packed_pages);
  RegionScan direct(this, false, direct_first_page_, file_pages_.load());
  // The two regions are each ascending; an id is in one of them only (Locate prefers the table).
  bool more_p = false, more_d = false;
  SHOAL_RETURN_IF_ERROR(packed.Next(&more_p));
  SHOAL_RETURN_IF_ERROR(direct.Next(&more_d));
  while (more_p || more_d) {
    if (more_p && (!more_d || packed.id() < direct.id())) {
      SHOAL_RETURN_IF_ERROR(on_vector(packed.id(), packed.vector()));
      SHOAL_RETURN_IF_ERROR(packed.Next(&more_p));
    } else {
      SHOAL_RETURN_IF_ERROR(on_vector(direct.id(), direct.vector()));
      SHOAL_RETURN_IF_ERROR(direct.Next(&more_d));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<VectorFile::Compaction> VectorFile::WriteCompacted(
    VectorFile& source, const std::string& path, uint64_t base_id,
    const std::function<bool(uint64_t)>& keep, FileSystem* fs) {
  if (base_id > kMaxId + 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": base id ", base_id, " > ", kMaxId));
  }
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<File> file, fs->Open(path, OpenMode::kCreate));
  auto fail = [&](absl::Status s) {
    file.reset();
    (void)fs->Unlink(path);
    return s;
  };
  const uint32_t slots = source.slots_, pages_per = source.pages_per_;
  const size_t vec = 4 * static_cast<size_t>(source.dim_);
  Compaction result;
  result.bytes_before = source.size_bytes();
  std::vector<uint64_t> kept;
  PageSink sink(file.get());
  auto seal_slots = [&]() {  // the page of packed slots just filled (small vectors)
    const uint64_t page_no = 1 + (kept.size() - 1) / slots;
    return sink.Emit(PageKind::kVector, page_no, 0, source.PayloadBytes(0));
  };
  absl::Status scanned = source.Scan([&](uint64_t id, const float* v) -> absl::Status {
    if (!keep(id)) {
      ++result.dropped;
      return absl::OkStatus();
    }
    const auto* src = reinterpret_cast<const uint8_t*>(v);
    if (slots > 0) {
      const uint32_t slot = static_cast<uint32_t>(kept.size() % slots);
      uint8_t* payload = sink.page() + kPageHeader;
      std::memcpy(payload + slot * vec, src, vec);
      if (slots > 1) payload[slots * vec + slot / 8] |= static_cast<uint8_t>(1u << (slot % 8));
      kept.push_back(id);
      return slot + 1 == slots ? seal_slots() : absl::OkStatus();
    }
    kept.push_back(id);
    for (uint32_t piece = 0; piece < pages_per; ++piece) {
      const uint32_t bytes = source.PayloadBytes(piece);
      std::memcpy(sink.page() + kPageHeader, src + piece * kPagePayload, bytes);
      SHOAL_RETURN_IF_ERROR(sink.Emit(PageKind::kVector, id, piece, bytes));
    }
    return absl::OkStatus();
  });
  if (!scanned.ok()) return fail(scanned);
  if (slots > 0 && kept.size() % slots != 0) {
    if (absl::Status s = seal_slots(); !s.ok()) return fail(s);
  }
  Header h;
  h.base_id = base_id;
  h.packed_count = kept.size();
  h.packed_first_page = 1;
  h.table_first_page =
      1 + (slots > 0 ? (kept.size() + slots - 1) / slots : kept.size() * pages_per);
  if (absl::Status s = EmitIdTable(kept, kIdsPerTablePage, sink); !s.ok()) return fail(s);
  if (absl::Status s = sink.Flush(); !s.ok()) return fail(s);
  h.direct_first_page = sink.next_page();
  SealHeader(sink.page(), source.dim_, h);
  if (absl::Status s = file->Write(0, sink.page_bytes()); !s.ok()) return fail(s);
  if (absl::Status s = file->Sync(); !s.ok()) return fail(s);
  result.kept = kept.size();
  result.bytes_after = sink.next_page() * kPageSize;
  return result;
}

}  // namespace shoal::storage
