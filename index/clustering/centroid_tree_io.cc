// CentroidTree's binary form (little-endian, as the host):
//   "SHOALCT\0"  u32 version (1)  u32 dim  u32 num_nodes  u32 num_leaves  u64 num_points
//   u32 child_begin[num_nodes + 1]       (children are implicit: node i > 0 is child i - 1)
//   u32 leaf_node[num_leaves]
//   f32 inner_centroids[(num_nodes - num_leaves) * dim]   inner nodes in id order
//   f32 leaf_centroids[num_leaves * dim]
//   u32 point_leaf[num_points]
//   u32 crc32c of every byte before it
// Deserialize checks the checksum first, then that the arrays describe a tree, so that a
// corrupt file can never make a later NearestLeaves read out of bounds.
#include <array>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "index/clustering/centroid_tree.h"

namespace shoal::index {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'O', 'A', 'L', 'C', 'T', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 * 4 + 8;

// CRC32C (Castagnoli), table-driven; a few hundred MB/s is plenty for trees of tens of MB.
uint32_t Crc32c(const char* data, size_t size) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int b = 0; b < 8; ++b) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = table[(crc ^ static_cast<uint8_t>(data[i])) & 0xFF] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

template <typename T>
void Put(std::string& out, const T* v, size_t count) {
  out.append(reinterpret_cast<const char*>(v), count * sizeof(T));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& where) : bytes_(bytes), where_(where) {}
  size_t offset() const { return offset_; }
  template <typename T>
  void Get(T* v, size_t count) {
    if (count == 0) return;  // v may be an empty vector's null data()
    std::memcpy(v, bytes_.data() + offset_, count * sizeof(T));
    offset_ += count * sizeof(T);
  }
  absl::Status Error(size_t at, const std::string& what) const {
    return absl::DataLossError(
        absl::StrCat(where_, ": corrupt centroid tree at offset ", at, ": ", what));
  }

 private:
  std::string_view bytes_;
  const std::string& where_;
  size_t offset_ = 0;
};

}  // namespace

std::string CentroidTree::Serialize() const {
  std::string out;
  const auto dim = static_cast<uint32_t>(dim_);
  const auto nodes = static_cast<uint32_t>(num_nodes());
  const auto leaves = static_cast<uint32_t>(num_leaves());
  const uint64_t points = point_leaf_.size();
  out.reserve(kHeaderBytes + 4 * (child_begin_.size() + leaf_node_.size() + points + 1) +
              4 * (inner_centroids_.size() + leaf_centroids_.size()));
  Put(out, kMagic, 8);
  Put(out, &kVersion, 1);
  Put(out, &dim, 1);
  Put(out, &nodes, 1);
  Put(out, &leaves, 1);
  Put(out, &points, 1);
  Put(out, child_begin_.data(), child_begin_.size());
  Put(out, leaf_node_.data(), leaf_node_.size());
  Put(out, inner_centroids_.data(), inner_centroids_.size());
  Put(out, leaf_centroids_.data(), leaf_centroids_.size());
  Put(out, point_leaf_.data(), point_leaf_.size());
  const uint32_t crc = Crc32c(out.data(), out.size());
  Put(out, &crc, 1);
  return out;
}

absl::StatusOr<CentroidTree> CentroidTree::Deserialize(std::string_view bytes,
                                                       const std::string& where) {
  Reader in(bytes, where);
  if (bytes.size() < kHeaderBytes + 4) {
    return in.Error(bytes.size(), absl::StrCat("truncated: ", bytes.size(),
                                               " bytes, need at least ", kHeaderBytes + 4));
  }
  char magic[8];
  uint32_t version, dim, nodes, leaves;
  uint64_t points;
  in.Get(magic, 8);
  if (std::memcmp(magic, kMagic, 8) != 0) return in.Error(0, "bad magic");
  in.Get(&version, 1);
  if (version != kVersion) return in.Error(8, absl::StrCat("unsupported version ", version));
  in.Get(&dim, 1);
  in.Get(&nodes, 1);
  in.Get(&leaves, 1);
  in.Get(&points, 1);
  if (dim == 0 || nodes == 0 || leaves == 0 || leaves > nodes || nodes >= (1u << 31) ||
      dim >= (1u << 24) || points >= (uint64_t{1} << 32)) {
    return in.Error(12, absl::StrCat("implausible header: dim ", dim, ", nodes ", nodes,
                                     ", leaves ", leaves, ", points ", points));
  }
  const uint64_t expected =
      kHeaderBytes + 4 * (uint64_t{nodes} + 1 + leaves + points + 1) + 4 * uint64_t{nodes} * dim;
  if (bytes.size() != expected) {
    return in.Error(std::min<uint64_t>(bytes.size(), expected),
                    absl::StrCat(bytes.size() < expected ? "truncated" : "trailing bytes",
                                 ": size ", bytes.size(), ", header implies ", expected));
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + expected - 4, 4);
  if (Crc32c(bytes.data(), expected - 4) != stored_crc) {
    return in.Error(expected - 4, "checksum mismatch");
  }
  CentroidTree tree;
  tree.dim_ = dim;
  tree.child_begin_.resize(size_t{nodes} + 1);
  tree.leaf_node_.resize(leaves);
  tree.inner_centroids_.resize(size_t{nodes - leaves} * dim);
  tree.leaf_centroids_.resize(size_t{leaves} * dim);
  tree.point_leaf_.resize(points);
  const size_t child_at = in.offset();
  in.Get(tree.child_begin_.data(), tree.child_begin_.size());
  const size_t leaf_at = in.offset();
  in.Get(tree.leaf_node_.data(), leaves);
  in.Get(tree.inner_centroids_.data(), tree.inner_centroids_.size());
  in.Get(tree.leaf_centroids_.data(), tree.leaf_centroids_.size());
  const size_t point_at = in.offset();
  in.Get(tree.point_leaf_.data(), points);

  // Children are implicit (node i > 0 is entry i - 1), so a tree needs: offsets from 0 to
  // nodes - 1, non-decreasing, and every child id greater than its parent's.
  const auto& begin = tree.child_begin_;
  if (begin[0] != 0 || begin[nodes] != nodes - 1) return in.Error(child_at, "bad child offsets");
  tree.slot_.assign(nodes, UINT32_MAX);
  uint32_t inner = 0;
  for (uint32_t i = 0; i < nodes; ++i) {
    if (begin[i + 1] < begin[i]) return in.Error(child_at + 4 * i, "decreasing child offsets");
    if (begin[i + 1] > begin[i] && begin[i] < i) {
      return in.Error(child_at + 4 * i, "child id not above its parent's");
    }
    if (begin[i + 1] > begin[i]) tree.slot_[i] = inner++;
  }
  if (inner != nodes - leaves) return in.Error(child_at, "leaf count disagrees with the header");
  for (uint32_t l = 0; l < leaves; ++l) {
    const uint32_t node = tree.leaf_node_[l];
    if (node >= nodes || begin[node + 1] != begin[node] || tree.slot_[node] != UINT32_MAX) {
      return in.Error(leaf_at + 4 * l, absl::StrCat("bad leaf node ", node));
    }
    tree.slot_[node] = l;
  }
  for (uint64_t i = 0; i < points; ++i) {
    if (tree.point_leaf_[i] >= leaves) return in.Error(point_at + 4 * i, "point leaf out of range");
  }
  tree.children_.resize(nodes - 1);
  std::iota(tree.children_.begin(), tree.children_.end(), 1u);
  tree.BuildNavigationCopy();
  return tree;
}

}  // namespace shoal::index
