#include "index/postings/posting_entries.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"

namespace shoal::index {
namespace {

// Where a segment's entries start and how many bytes each takes.
struct SegmentLayout {
  size_t head = 8;  // the (count, field) header and any per-segment fields after it
  size_t entry_bytes = 0;
};

// Walks a posting payload's segments (one per write: the posting's, then one per append), each
// a header of (count, field) uint32s, then layout(field)'s head and count entries. Calls
// take(segment, count, field) for each; a segment whose field layout() refuses (nullopt) or that
// is shorter than its count says is bad(byte offset, count, field read), returned as is.
template <typename Layout, typename Take, typename Bad>
absl::Status ForEachSegment(std::span<const uint8_t> payload, Layout layout, Take take, Bad bad) {
  size_t at = 0;
  do {
    const std::span<const uint8_t> seg = payload.subspan(at);
    uint32_t count = 0, field = 0;
    if (seg.size() >= 8) {
      std::memcpy(&count, seg.data(), 4);
      std::memcpy(&field, seg.data() + 4, 4);
    }
    const std::optional<SegmentLayout> l =
        seg.size() >= 8 ? layout(field) : std::optional<SegmentLayout>();
    const uint64_t want = l ? l->head + uint64_t{count} * l->entry_bytes : 0;
    if (!l || seg.size() < want) return bad(at, count, field);
    take(seg, count, field);
    at += want;
  } while (at < payload.size());
  return absl::OkStatus();
}

}  // namespace

std::vector<uint8_t> EncodePostingEntries(std::span<const uint64_t> ids,
                                          std::span<const float* const> vectors, size_t dim) {
  const uint32_t count = static_cast<uint32_t>(ids.size());
  const uint32_t d = static_cast<uint32_t>(dim);
  std::vector<uint8_t> out(8 + count * (8 + dim * sizeof(float)));
  uint8_t* p = out.data();
  std::memcpy(p, &count, 4);
  std::memcpy(p + 4, &d, 4);
  if (count == 0) return out;  // no ids: ids.data() may be null, and memcpy of null is UB
  std::memcpy(p + 8, ids.data(), count * 8);
  uint8_t* v = p + 8 + count * 8;
  for (uint32_t i = 0; i < count; ++i) {
    std::memcpy(v + i * dim * sizeof(float), vectors[i], dim * sizeof(float));
  }
  return out;
}

absl::Status DecodePostingEntries(std::span<const uint8_t> payload, size_t dim,
                                  const std::string& where, DecodedPosting* out) {
  out->dim = dim;
  out->ids.clear();
  out->vectors.clear();
  return ForEachSegment(
      payload,
      [&](uint32_t field) {
        return field == dim ? SegmentLayout{8, 8 + dim * sizeof(float)}
                            : std::optional<SegmentLayout>();
      },
      [&](std::span<const uint8_t> seg, uint32_t count, uint32_t) {
        if (count == 0) return;  // an empty segment: nothing to copy (and memcpy of null is UB)
        const size_t n = out->ids.size();
        out->ids.resize(n + count);
        out->vectors.resize((n + count) * dim);
        std::memcpy(out->ids.data() + n, seg.data() + 8, count * 8);
        std::memcpy(out->vectors.data() + n * dim, seg.data() + 8 + count * 8,
                    count * dim * sizeof(float));
      },
      [&](size_t at, uint32_t count, uint32_t field) {
        return absl::DataLossError(absl::StrCat(where, ": posting payload of ", payload.size(),
                                                " bytes does not hold ", count,
                                                " entries of dimension ", dim, " at byte ", at,
                                                " (header says dimension ", field, ")"));
      });
}

std::vector<uint8_t> EncodeQuantizedEntries(const QuantizedPosting& p, bool norms, size_t begin,
                                            size_t end) {
  if (p.packed) {
    std::fprintf(stderr, "EncodeQuantizedEntries: codes in the scan form (Unpack first)\n");
    std::abort();
  }
  end = std::min(end, p.size());
  begin = std::min(begin, end);
  const uint32_t count = static_cast<uint32_t>(end - begin);
  const uint32_t cb = static_cast<uint32_t>(p.code_bytes);
  const auto [lo, hi] = std::minmax_element(p.ids.begin() + begin, p.ids.begin() + end);
  const uint64_t base = count == 0 ? 0 : *lo;
  const bool compact = count == 0 || *hi - base <= UINT32_MAX;
  const bool with_norms = norms || !compact;  // a wide segment always keeps them
  const size_t id_bytes = compact ? 4 : 8, head = compact ? 16 : 8;
  std::vector<uint8_t> out(head + size_t{count} * (id_bytes + (with_norms ? 4 : 0) + cb));
  uint8_t* o = out.data();
  const uint32_t field =
      cb | (compact ? kSegmentCompact : 0) | (compact && norms ? kSegmentNorms : 0);
  std::memcpy(o, &count, 4);
  std::memcpy(o + 4, &field, 4);
  if (compact) std::memcpy(o + 8, &base, 8);
  o += head;
  if (count == 0) return out;  // memcpy of a null pointer is UB
  if (compact) {
    for (size_t i = begin; i < end; ++i, o += 4) {
      const uint32_t offset = static_cast<uint32_t>(p.ids[i] - base);
      std::memcpy(o, &offset, 4);
    }
  } else {
    std::memcpy(o, p.ids.data() + begin, count * 8);
    o += count * 8;
  }
  if (with_norms) {
    std::memcpy(o, p.sq_norms.data() + begin, count * 4);
    o += count * 4;
  }
  std::memcpy(o, p.codes.data() + begin * cb, size_t{count} * cb);
  return out;
}

absl::Status DecodeQuantizedEntries(std::span<const uint8_t> payload, size_t code_bytes, bool norms,
                                    const std::string& where, QuantizedPosting* out) {
  out->code_bytes = code_bytes;
  out->ids.clear();
  out->sq_norms.clear();
  out->codes.clear();
  auto compact = [](uint32_t field) { return (field & kSegmentCompact) != 0; };
  auto has_norms = [&](uint32_t field) { return !compact(field) || (field & kSegmentNorms) != 0; };
  return ForEachSegment(
      payload,
      [&](uint32_t field) -> std::optional<SegmentLayout> {
        if ((field & kSegmentCodeBytes) != code_bytes) return std::nullopt;
        if (!compact(field) && (field & kSegmentNorms) != 0) return std::nullopt;
        if (norms && !has_norms(field)) return std::nullopt;
        return SegmentLayout{compact(field) ? size_t{16} : size_t{8},
                             (compact(field) ? 4 : 8) + (has_norms(field) ? 4 : 0) + code_bytes};
      },
      [&](std::span<const uint8_t> seg, uint32_t count, uint32_t field) {
        const size_t n = out->ids.size();
        out->ids.resize(n + count);
        out->sq_norms.resize(n + count);  // 0 where the segment keeps no |x|^2
        out->codes.resize((n + count) * code_bytes);
        if (count == 0) return;  // an empty segment: nothing to copy (and memcpy of null is UB)
        const uint8_t* in = seg.data() + (compact(field) ? 16 : 8);
        if (compact(field)) {
          uint64_t base = 0;
          std::memcpy(&base, seg.data() + 8, 8);
          for (size_t i = 0; i < count; ++i, in += 4) {
            uint32_t offset = 0;
            std::memcpy(&offset, in, 4);
            out->ids[n + i] = base + offset;
          }
        } else {
          std::memcpy(out->ids.data() + n, in, count * 8);
          in += count * 8;
        }
        if (has_norms(field)) {
          std::memcpy(out->sq_norms.data() + n, in, count * 4);
          in += count * 4;
        }
        std::memcpy(out->codes.data() + n * code_bytes, in, size_t{count} * code_bytes);
      },
      [&](size_t at, uint32_t count, uint32_t field) {
        return absl::DataLossError(absl::StrCat(
            where, ": quantized posting of ", payload.size(), " bytes does not hold ", count,
            " codes of ", code_bytes, " bytes", norms ? " with |x|^2" : "", " at byte ", at,
            " (header says ", field & kSegmentCodeBytes, compact(field) ? ", compact" : "",
            has_norms(field) ? "" : ", no |x|^2", ")"));
      });
}

}  // namespace shoal::index
