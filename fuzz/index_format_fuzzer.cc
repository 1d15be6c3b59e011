// Fuzzes the readers of an index directory's files (index/): the centroid tree (centroids.ckpt),
// the quantizer (quantizer.bin: SQ8 and RaBitQ), RaBitQ's own header and rotation, and the
// entries of float and quantized postings.
//
// Input: [kind][param][flags] payload. `kind` picks the reader, `param` its dimension or code
// size; flags bit 0 rewrites the payload's trailing CRC-32C to match, so the fuzzer reaches the
// structural checks behind the checksum (a file whose checksum holds but whose contents lie:
// a bug of a writer, not a flipped bit). Readers must return DataLoss, never crash, and what
// they accept must be usable: a tree answers NearestLeaves, a quantizer encodes and estimates.
//
// SHOAL_FUZZ_WRITE_SEEDS=DIR: write valid inputs of every kind to DIR and exit (the seed
// corpus in fuzz/corpus/index_format_fuzzer/ was made so).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "index/clustering/centroid_tree.h"
#include "index/clustering/kmeans.h"
#include "index/postings/posting_entries.h"
#include "index/quantization/quantizer.h"
#include "index/quantization/rabitq.h"
#include "storage/io/crc32c.h"

namespace {

using namespace shoal::index;  // NOLINT: a fuzz harness over one namespace

enum Kind : uint8_t { kTree, kQuantizer, kPosting, kQuantizedPosting, kRabitq, kRotation, kKinds };

void UseTree(const CentroidTree& tree) {
  std::vector<float> query(tree.dim(), 0.5f);
  std::vector<std::pair<float, uint32_t>> out;
  const size_t m = std::min<size_t>(4, tree.num_leaves());
  tree.NearestLeaves(query.data(), m, 8, &out, CentroidScoring::kFloat);
  tree.NearestLeaves(query.data(), m, 8, &out, CentroidScoring::kHalf);
  tree.NearestLeaves(query.data(), m, tree.num_nodes(), &out);
  for (const auto& [distance, leaf] : out) {
    if (leaf >= tree.num_leaves()) std::abort();
  }
}

void UseQuantizer(const PostingQuantizer& q) {
  if (q.dim() == 0 || q.dim() > 4096) return;
  std::vector<float> x(q.dim(), 0.25f), centroid(q.dim(), 0.0f);
  QuantizedPosting posting;
  posting.code_bytes = q.code_bytes();
  posting.ids = {1, 2};
  posting.sq_norms = {0.0f, 0.0f};
  posting.codes.resize(2 * q.code_bytes());
  q.Encode(x.data(), centroid.data(), posting.codes.data());
  q.Encode(centroid.data(), centroid.data(), posting.codes.data() + q.code_bytes());
  std::vector<float> prepared_query(q.prepared_dim()), prepared_centroid(q.prepared_dim());
  q.Prepare(x.data(), prepared_query.data());
  q.Prepare(centroid.data(), prepared_centroid.data());
  q.Pack(&posting);
  float estimate[2], error[2];
  q.Estimate(prepared_query.data(), prepared_centroid.data(), posting, estimate, error);
  q.Unpack(&posting);
}

void FixCrc(std::string* payload) {
  if (payload->size() < 4) return;
  const uint32_t crc = shoal::storage::Crc32c(payload->data(), payload->size() - 4);
  std::memcpy(payload->data() + payload->size() - 4, &crc, 4);
}

void RunOne(Kind kind, uint8_t param, const std::string& payload) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(payload.data()),
                                       payload.size());
  switch (kind) {
    case kTree: {
      auto tree = CentroidTree::Deserialize(payload, "fuzz");
      if (tree.ok()) UseTree(*tree);
      break;
    }
    case kQuantizer: {
      auto q = DeserializeQuantizer(payload, "fuzz");
      if (q.ok()) UseQuantizer(**q);
      break;
    }
    case kPosting: {
      DecodedPosting out;
      (void)DecodePostingEntries(bytes, static_cast<size_t>(param % 64) + 1, "fuzz", &out);
      break;
    }
    case kQuantizedPosting: {
      QuantizedPosting out;
      (void)DecodeQuantizedEntries(bytes, size_t{param} + 1, /*norms=*/false, "fuzz", &out);
      (void)DecodeQuantizedEntries(bytes, size_t{param} + 1, /*norms=*/true, "fuzz", &out);
      break;
    }
    case kRabitq:
      (void)RaBitQ::Deserialize(payload, "fuzz");
      break;
    case kRotation:
      (void)RandomRotation::Deserialize(payload, "fuzz");
      break;
    default:
      break;
  }
}

void WriteSeed(const std::string& dir, const std::string& name, Kind kind, uint8_t param,
               const std::string& payload) {
  const std::string path = dir + "/" + name;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  const uint8_t header[3] = {kind, param, 0};
  std::fwrite(header, 1, 3, file);
  std::fwrite(payload.data(), 1, payload.size(), file);
  std::fclose(file);
}

void WriteSeeds(const std::string& dir) {
  constexpr size_t kDim = 8, kRows = 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> x(kRows * kDim);
  for (float& v : x) v = normal(rng);
  auto backend = MakeCpuClusteringBackend(1);
  TreeOptions options;
  options.num_leaves = 6;
  options.branching = 3;
  auto tree = CentroidTree::Build(*backend, x.data(), kRows, kDim, options);
  if (!tree.ok()) std::abort();
  WriteSeed(dir, "tree", kTree, 0, tree->Serialize());
  for (const char* spec : {"sq8", "rabitq:bits=1", "rabitq:bits=3"}) {
    auto q = MakeQuantizer(spec, kDim, 3);
    if (!q.ok()) std::abort();
    (*q)->Train(x.data(), kRows);
    WriteSeed(dir, std::string("quantizer_") + spec, kQuantizer, 0, (*q)->Serialize());
    QuantizedPosting posting;
    posting.code_bytes = (*q)->code_bytes();
    for (uint64_t i = 0; i < 3; ++i) {
      posting.ids.push_back(i);
      posting.sq_norms.push_back(1.0f);
      posting.codes.resize(posting.codes.size() + posting.code_bytes);
      (*q)->Encode(&x[i * kDim], &x[0], posting.codes.data() + i * posting.code_bytes);
    }
    // Both segment kinds (posting_entries.h): compact with and without |x|^2, then wide (ids
    // spanning more than 2^32), back to back as appends make them.
    std::vector<uint8_t> e = EncodeQuantizedEntries(posting, /*norms=*/false);
    const std::vector<uint8_t> with_norms = EncodeQuantizedEntries(posting, /*norms=*/true);
    e.insert(e.end(), with_norms.begin(), with_norms.end());
    posting.ids[2] = uint64_t{1} << 40;
    const std::vector<uint8_t> wide = EncodeQuantizedEntries(posting, /*norms=*/false);
    e.insert(e.end(), wide.begin(), wide.end());
    WriteSeed(dir, std::string("qposting_") + spec, kQuantizedPosting,
              static_cast<uint8_t>(posting.code_bytes - 1), std::string(e.begin(), e.end()));
  }
  const uint64_t ids[3] = {4, 5, 6};
  const float* rows[3] = {&x[0], &x[kDim], &x[2 * kDim]};
  const std::vector<uint8_t> entries = EncodePostingEntries(ids, rows, kDim);
  WriteSeed(dir, "posting", kPosting, kDim - 1, std::string(entries.begin(), entries.end()));
  const RandomRotation rotation(kDim, 11);
  WriteSeed(dir, "rotation", kRotation, 0, rotation.Serialize());
  const RaBitQ rabitq(kDim, 3, 11);
  WriteSeed(dir, "rabitq", kRabitq, 0, rabitq.Serialize());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const char* dir = std::getenv("SHOAL_FUZZ_WRITE_SEEDS")) {
    WriteSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  std::string payload(reinterpret_cast<const char*>(data + 3), size - 3);
  if (data[2] & 1) FixCrc(&payload);
  RunOne(static_cast<Kind>(data[0] % kKinds), data[1], payload);
  return 0;
}
