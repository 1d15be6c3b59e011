#include "index/spann/spann_index.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/distance/distance.h"
#include "index/postings/posting_navigator.h"
#include "index/postings/posting_prefetch.h"
#include "index/spann/candidate_intervals.h"
#include "index/spann/spann_builder.h"
#include "index/topk.h"

namespace shoal::index {
namespace {

storage::FileSystem& FileSystemOf(const SpannRuntimeOptions& options) {
  return options.fs != nullptr ? *options.fs : *storage::FileSystem::Default();
}

// Scanning every leaf centroid is memory-bound once they outgrow L2; the tree then touches only
// the beam's children (docs/PERFORMANCE.md has the measurements).
constexpr size_t kFlatNavigatorMaxPostings = 256;

}  // namespace

SpannIndex::SpannIndex(SpannManifest manifest, CentroidTree tree,
                       std::unique_ptr<storage::BlockReader> reader, std::string path,
                       size_t cache_bytes)
    : manifest_(std::move(manifest)),
      tree_(std::move(tree)),
      reader_(std::move(reader)),
      posting_path_(std::move(path)),
      descent_cost_(tree_),
      cache_(cache_bytes),
      code_cache_(0),
      vector_cache_(manifest_.dimension) {
  io_backend_ = reader_->backend();
  const std::string& nav = manifest_.options.navigator;
  flat_navigator_ =
      nav == "flat" || (nav == "auto" && tree_.num_leaves() <= kFlatNavigatorMaxPostings);
  navigator_by_cost_ = nav == "auto" && !flat_navigator_;
}

absl::StatusOr<std::unique_ptr<SpannIndex>> SpannIndex::Open(
    const std::string& dir, const SpannManifest& manifest,
    std::span<const storage::PostingRow> postings, const SpannRuntimeOptions& options) {
  const std::string tree_path = absl::StrCat(dir, "/", kCentroidFileName);
  SHOAL_ASSIGN_OR_RETURN(std::string bytes, storage::ReadFile(FileSystemOf(options), tree_path));
  SHOAL_ASSIGN_OR_RETURN(CentroidTree tree, CentroidTree::Deserialize(bytes, tree_path));
  if (tree.num_leaves() != manifest.num_postings || tree.dim() != manifest.dimension) {
    return absl::DataLossError(absl::StrCat(tree_path, ": ", tree.num_leaves(), " leaves of dim ",
                                            tree.dim(), ", manifest says ", manifest.num_postings,
                                            " of dim ", manifest.dimension));
  }
  tree.ReleasePointLeaves();  // the build's, not the search's
  const std::string path = absl::StrCat(dir, "/", kPostingFileName);
  SHOAL_ASSIGN_OR_RETURN(auto reader, storage::BlockReader::Open(path, options.io));
  auto index = std::unique_ptr<SpannIndex>(new SpannIndex(
      manifest, std::move(tree), std::move(reader), path, options.posting_cache_bytes));
  // Over the index's own tree: the directory reads its leaf centroids in place.
  SHOAL_ASSIGN_OR_RETURN(auto directory, InitialDirectory(index->tree_, postings));
  index->PublishDirectory(directory);
  if (manifest.options.quant != "none") {
    SHOAL_RETURN_IF_ERROR(
        index->LoadQuantized(FileSystemOf(options), dir, options.ram_limit_bytes, directory.get()));
    SHOAL_ASSIGN_OR_RETURN(
        directory->vectors,
        storage::VectorFile::Open(absl::StrCat(dir, "/", kVectorFileName), manifest.dimension,
                                  options.io, &FileSystemOf(options)));
    index->SetCacheBudget(options.posting_cache_bytes);
  }
  return index;
}

// Prepares every posting centroid, then reads every posting's codes into RAM, a few hundred
// extents per batch — unless they would not fit in `ram_limit_bytes` (0 = no limit) beside the
// prepared centroids, in which case they stay on SSD and queries read them (ReadQuantized) and
// prepare the centroid of each posting they scan: a rotation per posting read is little beside
// the read, and the RAM goes to the caches (at 2M x 128, 15 MiB of a 98 MiB budget).
absl::Status SpannIndex::LoadQuantized(storage::FileSystem& fs, const std::string& dir,
                                       size_t ram_limit_bytes, PostingDirectory* directory) {
  const std::string qpath = absl::StrCat(dir, "/", kQuantizerFileName);
  SHOAL_ASSIGN_OR_RETURN(std::string bytes, storage::ReadFile(fs, qpath));
  SHOAL_ASSIGN_OR_RETURN(quantizer_, DeserializeQuantizer(bytes, qpath));
  const size_t pd = quantizer_->prepares() ? quantizer_->prepared_dim() : 0;
  const auto& rows = directory->rows;
  std::vector<uint32_t> live;
  size_t code_bytes = 0;  // what the codes will hold in RAM (their scan form), ids and norms
  for (uint32_t p = 0; p < rows.size(); ++p) {
    if (!directory->live[p]) continue;
    live.push_back(p);
    code_bytes += sizeof(QuantizedPosting) + quantizer_->PackedBytes(rows[p].count) +
                  rows[p].count * (sizeof(uint64_t) + sizeof(float));
  }
  const size_t prepared_bytes = rows.size() * pd * sizeof(float);
  if (ram_limit_bytes != 0 && FixedMemoryBytes() + prepared_bytes + code_bytes > ram_limit_bytes) {
    codes_resident_ = false;
    prepare_on_scan_ = pd != 0;  // directory->prepared_dim stays 0: nothing prepared is kept
    return absl::OkStatus();
  }
  directory->prepared_dim = pd;
  directory->prepared.resize(rows.size() * pd);
  for (uint32_t p : live) {
    if (pd != 0) quantizer_->Prepare(directory->centroid(p), &directory->prepared[p * pd]);
  }
  constexpr size_t kBatch = 256;
  std::vector<uint8_t> payload;
  for (size_t first = 0; first < live.size(); first += kBatch) {
    const size_t count = std::min(kBatch, live.size() - first);
    std::vector<storage::ReadRequest> reads;
    for (size_t i = 0; i < count; ++i) {
      const auto& r = rows[live[first + i]];
      reads.push_back(storage::ExtentRequest({r.first_page, r.num_pages, r.bytes}));
    }
    SHOAL_RETURN_IF_ERROR(
        reader_->ReadBatch(reads, [&](size_t i, std::span<const uint8_t> pages) -> absl::Status {
          const storage::PostingRow& r = rows[live[first + i]];
          payload.clear();
          SHOAL_RETURN_IF_ERROR(storage::DecodePosting(pages, {r.first_page, r.num_pages, r.bytes},
                                                       r.posting, posting_path_, &payload));
          auto qp = std::make_shared<QuantizedPosting>();
          SHOAL_RETURN_IF_ERROR(DecodeQuantizedEntries(
              payload, quantizer_->code_bytes(), keeps_norms(),
              absl::StrCat(posting_path_, " posting ", r.posting), qp.get()));
          quantizer_->Pack(qp.get());
          directory->codes_bytes += qp->MemoryBytes();
          directory->codes[r.posting] = std::move(qp);
          return absl::OkStatus();
        }));
  }
  return absl::OkStatus();
}

absl::Status SpannIndex::ReadQuantized(
    const PostingDirectory& dir, std::span<const uint32_t> ids,
    const std::function<void(size_t, const QuantizedPosting&)>& scan, SearchStats* stats) const {
  std::vector<storage::ReadRequest> reads;
  reads.reserve(ids.size());
  for (uint32_t p : ids) {
    const auto& r = dir.rows[p];
    reads.push_back(storage::ExtentRequest({r.first_page, r.num_pages, r.bytes}));
  }
  std::vector<uint8_t> payload;
  ++stats->read_batches;
  return reader_->ReadBatch(reads, [&](size_t i, std::span<const uint8_t> pages) -> absl::Status {
    const storage::PostingRow& r = dir.rows[ids[i]];
    stats->bytes_read += pages.size();
    payload.clear();
    SHOAL_RETURN_IF_ERROR(storage::DecodePosting(pages, {r.first_page, r.num_pages, r.bytes},
                                                 r.posting, posting_path_, &payload));
    auto decoded = std::make_shared<QuantizedPosting>();
    SHOAL_RETURN_IF_ERROR(
        DecodeQuantizedEntries(payload, quantizer_->code_bytes(), keeps_norms(),
                               absl::StrCat(posting_path_, " posting ", r.posting), decoded.get()));
    quantizer_->Pack(decoded.get());
    scan(i, *decoded);
    const size_t charge = decoded->MemoryBytes();
    code_cache_.Insert(dir.serials[ids[i]], std::move(decoded), charge);
    return absl::OkStatus();
  });
}

void SpannIndex::RecacheRewritten(uint64_t old_serial, uint64_t new_serial,
                                  const std::function<DecodedPosting()>& entries) const {
  if (quantizer_ != nullptr || cache_.budget_bytes() == 0) return;
  if (old_serial != 0 && cache_.Lookup(old_serial) == nullptr) return;
  auto decoded = std::make_shared<DecodedPosting>(entries());
  const size_t charge = decoded->MemoryBytes();
  cache_.Insert(new_serial, std::move(decoded), charge);
}

void SpannIndex::RecacheRewrittenCodes(uint64_t old_serial, uint64_t new_serial,
                                       const std::function<QuantizedPosting()>& entries) const {
  if (quantizer_ == nullptr || codes_resident_ || code_cache_.budget_bytes() == 0) return;
  if (old_serial != 0 && code_cache_.Lookup(old_serial) == nullptr) return;
  auto codes = std::make_shared<QuantizedPosting>(entries());
  quantizer_->Pack(codes.get());  // cached codes are scanned in the scan form, as read ones are
  const size_t charge = codes->MemoryBytes();
  code_cache_.Insert(new_serial, std::move(codes), charge);
}

void SpannIndex::CacheFreshVectors(std::span<const uint64_t> ids, const float* vectors,
                                   const std::function<bool(uint64_t)>& skip) const {
  if (quantizer_ == nullptr) return;
  const size_t d = manifest_.dimension;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!skip(ids[i])) vector_cache_.Insert(ids[i], vectors + i * d);
  }
}

void SpannIndex::Uncache(std::span<const uint64_t> serials) const {
  for (uint64_t s : serials) {
    cache_.Erase(s);
    code_cache_.Erase(s);
  }
}

void SpannIndex::SetCacheBudget(size_t bytes) {
  if (quantizer_ == nullptr) {
    cache_.SetBudget(bytes);
    return;
  }
  cache_.SetBudget(0);
  // Codes read from SSD are reused by every query near them; a full vector only by queries whose
  // top-k it is near: codes get most of the budget.
  const size_t codes = codes_resident_ ? 0 : bytes / 4 * 3;
  code_cache_.SetBudget(codes);
  vector_cache_.SetBudget(bytes - codes);
}

size_t SpannIndex::FixedMemoryBytes() const {
  return sizeof(*this) + tree_.MemoryBytes() + directory()->MemoryBytes();
}

size_t SpannIndex::MemoryBytes() const {
  return FixedMemoryBytes() + cache_.charged_bytes() + vector_cache_.charged_bytes() +
         code_cache_.charged_bytes();
}

absl::Status SpannIndex::SearchOne(const PostingDirectory& dir, const float* q, size_t k,
                                   const SpannKnobs& knobs, const Exclusion& ex,
                                   std::vector<Neighbor>* out, SearchStats* stats,
                                   std::vector<uint32_t>* leaves) const {
  thread_local std::vector<uint32_t> postings;  // no allocation per query
  Navigate(dir, q, knobs, &postings);
  if (leaves != nullptr) {
    leaves->clear();
    for (uint32_t p : postings) {
      const uint32_t leaf = dir.origin[p];
      if (std::find(leaves->begin(), leaves->end(), leaf) == leaves->end()) leaves->push_back(leaf);
    }
  }
  if (quantizer_ != nullptr)
    return SearchQuantized(dir, q, k, postings, ex, knobs.scope, out, stats);
  const size_t d = manifest_.dimension;
  const Metric metric = manifest_.metric;
  TopK<uint64_t> top(k);
  absl::flat_hash_set<uint64_t> entered;  // ids pushed into `top` (replicas deduplicated)
  auto score = [&](const DecodedPosting& p) {
    stats->vectors_scored += p.size();
    for (size_t i = 0; i < p.size(); ++i) {
      const float dist = Distance(metric, q, p.vector(i), d);
      // Only a candidate that can enter the heap needs the duplicate check: a replica scored
      // again has the same distance, and the heap's bound only tightens.
      if (dist > top.Threshold()) continue;
      if (ex.Excludes(p.ids[i])) continue;
      if (entered.insert(p.ids[i]).second) top.Push(dist, p.ids[i]);
    }
  };
  std::vector<storage::ReadRequest> reads;
  std::vector<uint32_t> missing;
  for (uint32_t p : postings) {
    if (auto cached = cache_.Lookup(dir.serials[p])) {
      ++stats->cache_hits;
      cached->ForEachSegment(score);
    } else {
      missing.push_back(p);
      const auto& r = dir.rows[p];
      reads.push_back(storage::ExtentRequest({r.first_page, r.num_pages, r.bytes}));
    }
  }
  stats->postings_read += postings.size();
  if (!reads.empty()) {
    ++stats->read_batches;
    std::vector<uint8_t> payload;
    SHOAL_RETURN_IF_ERROR(
        reader_->ReadBatch(reads, [&](size_t i, std::span<const uint8_t> bytes) -> absl::Status {
          const storage::PostingRow& r = dir.rows[missing[i]];
          stats->bytes_read += bytes.size();
          payload.clear();
          SHOAL_RETURN_IF_ERROR(storage::DecodePosting(bytes, {r.first_page, r.num_pages, r.bytes},
                                                       r.posting, posting_path_, &payload));
          auto decoded = std::make_shared<DecodedPosting>();
          SHOAL_RETURN_IF_ERROR(DecodePostingEntries(
              payload, d, absl::StrCat(posting_path_, " posting ", r.posting), decoded.get()));
          score(*decoded);
          const size_t charge = decoded->MemoryBytes();
          cache_.Insert(dir.serials[missing[i]], std::move(decoded), charge);
          return absl::OkStatus();
        }));
  }
  out->clear();
  for (const auto& e : top.TakeSorted()) out->push_back({e.id, e.distance});
  return absl::OkStatus();
}

const float* SpannIndex::PreparedCentroid(const PostingDirectory& dir, uint32_t p) const {
  if (!prepare_on_scan_) return dir.prepared_centroid(p);
  thread_local base::AlignedVector<float> centroid;
  centroid.resize(quantizer_->prepared_dim());
  quantizer_->Prepare(dir.centroid(p), centroid.data());
  return centroid.data();
}

absl::Status SpannIndex::SearchQuantized(const PostingDirectory& dir, const float* q, size_t k,
                                         std::span<const uint32_t> postings, const Exclusion& ex,
                                         const PostingScope* scope, std::vector<Neighbor>* out,
                                         SearchStats* stats) const {
  stats->postings_read += postings.size();
  const size_t d = manifest_.dimension;
  const bool ip = manifest_.metric == Metric::kInnerProduct;
  const float q_sq = ip ? InnerProduct(q, q, d) : 0;
  thread_local CandidateIntervals cands;
  thread_local std::vector<float> lower, upper;
  thread_local std::vector<uint32_t> within;
  thread_local base::AlignedVector<float> prepared;  // the kernels load whole lines of it
  cands.Reset(k);
  prepared.resize(quantizer_->prepared_dim());
  const bool members_first = MembersFirst(scope, ex);
  bool query_prepared = false;                 // not while every posting so far went members first
  thread_local std::vector<uint64_t> members;  // scored exactly after the scan
  members.clear();
  auto scan = [&](uint32_t p, const QuantizedPosting& qp) {
    const size_t n = qp.size();
    if (members_first && TakeMembers(dir, p, qp, *scope, ex, &members)) return;
    if (!std::exchange(query_prepared, true)) quantizer_->Prepare(q, prepared.data());
    if (lower.size() < n) {  // grown only: a resize per posting costs more than its scan's tail
      lower.resize(n);
      upper.resize(n);
      within.resize(n);
    }
    // Each code's lower and upper bound, straight from the quantizer.
    float* lo = lower.data();
    float* hi = upper.data();
    quantizer_->Bounds(prepared.data(), PreparedCentroid(dir, p), qp, lo, hi);
    stats->vectors_scored += n;
    if (ip) {  // -<q,x> = (|q-x|^2 - |q|^2 - |x|^2) / 2
      for (size_t i = 0; i < n; ++i) {
        lo[i] = (lo[i] - q_sq - qp.sq_norms[i]) / 2;
        hi[i] = (hi[i] - q_sq - qp.sq_norms[i]) / 2;
      }
    }
    // Most codes are dropped on their lower bound: their indexes are listed without a branch
    // per code (a branch there mispredicts often; docs/PERFORMANCE.md, "Fewer instructions per
    // code"). The running bound only falls, so each listed code is checked against it again.
    const size_t listed = SelectNotAbove(lo, n, cands.running(), within.data());
    for (size_t j = 0; j < listed; ++j) {
      const uint32_t i = within[j];
      if (lo[i] > cands.running()) continue;  // dropped before any bookkeeping
      if (ex.Excludes(qp.ids[i])) continue;
      cands.Offer(qp.ids[i], lo[i], hi[i]);
    }
  };
  thread_local std::vector<uint32_t> missing;
  missing.clear();
  const PostingScope* listed = members_first && scope->ListsMembers() ? scope : nullptr;
  auto prefetch = [&](uint32_t p) { PrefetchScan(dir, p, listed, prepared.size()); };
  if (codes_resident_ && !postings.empty()) {
    prefetch(postings[0]);
    if (postings.size() > 1) PrefetchHeader(dir, postings[1]);
  }
  for (size_t i = 0; i < postings.size(); ++i) {
    const uint32_t p = postings[i];
    if (codes_resident_) {
      // The next posting loads while this one is scanned; the one after it, its header.
      if (i + 2 < postings.size()) PrefetchHeader(dir, postings[i + 2]);
      if (i + 1 < postings.size()) prefetch(postings[i + 1]);
      scan(p, *dir.codes[p]);
    } else if (auto cached = code_cache_.Lookup(dir.serials[p])) {
      ++stats->cache_hits;
      scan(p, *cached);
    } else {
      missing.push_back(p);
    }
  }
  if (!missing.empty()) {
    SHOAL_RETURN_IF_ERROR(ReadQuantized(
        dir, missing, [&](size_t i, const QuantizedPosting& qp) { scan(missing[i], qp); }, stats));
  }
  if (!members.empty()) SHOAL_RETURN_IF_ERROR(ScoreMembers(dir, q, k, &members, &cands, stats));
  thread_local std::vector<std::pair<float, uint64_t>> survivors, exact;
  cands.Survivors(&survivors, &exact);
  return RerankByLowerBound(dir, q, k, survivors, exact, out, stats);
}

}  // namespace shoal::index
