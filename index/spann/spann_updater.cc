#include "index/spann/spann_updater.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/spann/spann_builder.h"
#include "index/spann/update_work.h"

namespace shoal::index {

SpannUpdater::SpannUpdater(SpannIndex* index, const UpdaterOptions& options)
    : index_(index), options_(options) {}

SpannUpdater::~SpannUpdater() = default;

absl::StatusOr<std::unique_ptr<SpannUpdater>> SpannUpdater::Open(SpannIndex* index,
                                                                 const std::string& dir,
                                                                 const UpdaterOptions& options) {
  auto up = std::unique_ptr<SpannUpdater>(new SpannUpdater(index, options));
  up->cap_ = std::max<uint32_t>(index->manifest().posting_cap, 4);
  up->floor_ =
      options.merge_floor != 0 ? options.merge_floor : std::max<uint32_t>(up->cap_ / 10, 1);
  storage::FileSystem* fs = options.fs != nullptr ? options.fs : storage::FileSystem::Default();
  up->dir_ = dir;
  up->fs_ = fs;
  SHOAL_RETURN_IF_ERROR(up->RemoveCompactionLeftover());
  SHOAL_ASSIGN_OR_RETURN(up->writer_,
                         storage::PostingFileWriter::OpenForAppend(index->posting_path(), fs));
  if (index->quantizer() == nullptr) {
    SHOAL_ASSIGN_OR_RETURN(
        up->own_vectors_,
        storage::VectorFile::Open(absl::StrCat(dir, "/", kVectorFileName),
                                  index->manifest().dimension, storage::IoBackend::kPread, fs));
  }
  // Free pages: every page of the posting file that no live directory row references (extents
  // written by a change that crashed before its commit, or retired before a restart).
  const auto current = index->directory();
  std::vector<storage::Extent> used;
  for (uint32_t p = 0; p < current->size(); ++p) {
    if (!current->live[p]) continue;
    const auto& r = current->rows[p];
    used.push_back({r.first_page, r.num_pages, r.bytes});
  }
  up->pages_ = std::make_shared<storage::PageAllocator>(
      storage::PageAllocator::FromUsed(up->writer_->size_bytes() / storage::kPageSize, used));
  return up;
}

absl::StatusOr<SpannUpdater::Change> SpannUpdater::Insert(std::span<const uint64_t> ids,
                                                          const float* vectors,
                                                          const DeadFn& dead) {
  const size_t d = index_->manifest().dimension;
  SHOAL_RETURN_IF_ERROR(FinishVectorSwitch());
  storage::VectorFile* vf = vector_file();
  for (size_t i = 0; i < ids.size(); ++i) SHOAL_RETURN_IF_ERROR(vf->Put(ids[i], vectors + i * d));
  SHOAL_RETURN_IF_ERROR(vf->Sync());
  index_->CacheFreshVectors(ids, vectors, dead);
  const auto current = index_->directory();
  UpdateWork work(this, *current, dead, SweepGc::kWhenMany);
  // Every vector placed first, then the postings chosen that are not in RAM read in one batch:
  // read as the appends reached them, one after another, the thread spent most of a step waiting
  // for each read in turn (the more so with writers' fsyncs queued beside them).
  std::vector<uint32_t> one, chosen;
  std::vector<size_t> first = {0};  // vector i's postings: chosen[first[i], first[i + 1])
  for (size_t i = 0; i < ids.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(work.Pace());
    work.Choose(vectors + i * d, &one);
    chosen.insert(chosen.end(), one.begin(), one.end());
    first.push_back(chosen.size());
  }
  SHOAL_RETURN_IF_ERROR(work.Prefetch(chosen));
  work.ReserveAppends(chosen);
  for (size_t i = 0; i < ids.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(work.Pace());
    const float* x = vectors + i * d;
    work.AddFresh(ids[i], x);
    for (size_t j = first[i]; j < first[i + 1]; ++j) {
      SHOAL_RETURN_IF_ERROR(work.Append(chosen[j], ids[i], x, /*known_new=*/true));
    }
  }
  SHOAL_RETURN_IF_ERROR(work.SplitOverfull());
  SHOAL_ASSIGN_OR_RETURN(Change change, work.Finish());
  absl::MutexLock lock(&stats_mu_);
  stats_.inserted += ids.size();
  return change;
}

absl::StatusOr<SpannUpdater::Change> SpannUpdater::Sweep(uint32_t first, uint32_t count,
                                                         const DeadFn& dead, SweepGc gc,
                                                         std::vector<uint64_t>* kept) {
  const auto current = index_->directory();
  UpdateWork work(this, *current, dead, gc);
  const uint32_t end = static_cast<uint32_t>(std::min<size_t>(current->size(), first + count));
  if (index_->quantizer() == nullptr) {
    // Full-vector tier: the loop below loads every live posting of the range; those not in RAM
    // are read in one batch first, as an insert step's are.
    std::vector<uint32_t> range;
    for (uint32_t p = first; p < end; ++p) {
      if (current->live[p]) range.push_back(p);
    }
    SHOAL_RETURN_IF_ERROR(work.Prefetch(range));
  }
  for (uint32_t p = first; p < end; ++p) {
    SHOAL_RETURN_IF_ERROR(work.Pace());
    if (!work.dir().live[p]) continue;
    if (const auto& codes = current->codes[p]; codes != nullptr) {
      // Quantized tier: the ids are in RAM, so a posting that needs nothing is not loaded.
      const size_t n = codes->size();
      const size_t n_dead = static_cast<size_t>(std::count_if(
          codes->ids.begin(), codes->ids.end(), [&](uint64_t id) { return dead(id); }));
      const bool gc_now = n_dead > 0 && (gc == SweepGc::kAll || UpdateWork::ManyDead(n_dead, n));
      if (!gc_now && n - n_dead >= floor_ && n <= cap_) {
        if (n_dead > 0 && kept != nullptr) {
          for (uint64_t id : codes->ids) {
            if (dead(id)) kept->push_back(id);
          }
        }
        continue;
      }
    }
    SHOAL_ASSIGN_OR_RETURN(WorkEntries * e, work.Load(p));
    if (e->size() - e->dead < floor_ && work.live_postings() > 1) {
      SHOAL_RETURN_IF_ERROR(work.Merge(p));
    } else if (e->size() > cap_) {
      SHOAL_RETURN_IF_ERROR(work.Split(p, 0));
    }
  }
  if (kept != nullptr) work.DeadHeld(kept);
  return work.Finish();
}

absl::StatusOr<SpannUpdater::Change> UpdateWork::Finish() {
  SpannUpdater::Change change;
  PostingDirectory& n = *next_;
  std::vector<storage::Extent> written;  // runs allocated by this change
  std::vector<uint64_t> serials;         // the serials it gave rewritten postings
  bool wrote = false;
  // A failed write or fsync: no row names the pages this change wrote (allocated runs, or the
  // pages kept after an extent for its appends), so they are free again whatever they hold, and
  // the next change writes its postings anew — a retry needs no reopen. The cache entries made
  // for serials that will never be published go too.
  auto fail = [&](absl::Status s) {
    for (const auto& e : written) up_->pages_->Free(e.first_page, e.num_pages);
    index_.Uncache(serials);
    return s;
  };
  for (auto& [p, e] : touched_) {
    if (!e.dirty || !n.live[p]) continue;
    if (absl::Status s = Pace(); !s.ok()) return fail(std::move(s));
    bool appended = false;
    absl::StatusOr<storage::Extent> ext = WritePosting(p, e, &written, &appended);
    if (!ext.ok()) return fail(ext.status());
    wrote = true;
    uint64_t old_serial = 0;
    if (p < cur_.size() && cur_.live[p]) {
      const auto& old = cur_.rows[p];
      // An append keeps the old extent (and the pages kept after it) in the new one.
      if (!appended) {
        change.retired.push_back({old.first_page, old.num_pages + cur_.reserved[p], old.bytes});
      }
      old_serial = cur_.serials[p];
      change.uncache.push_back(old_serial);
    }
    PostingWrite w{p, *ext, static_cast<uint32_t>(e.size()), n.origin[p]};
    w.centroid.assign(n.centroid(p), n.centroid(p) + dim_);
    w.tree_centroid = n.own_slot[p] == PostingDirectory::kTreeCentroid;
    change.directory.written.push_back(std::move(w));
    n.rows[p] = storage::PostingRow{
        p,          ext->first_page, ext->num_pages, ext->bytes, static_cast<uint32_t>(e.size()),
        n.origin[p]};
    n.serials[p] = NextExtentSerial();
    serials.push_back(n.serials[p]);
    Recache(old_serial, n.serials[p], e);
    if (index_.quantizer() != nullptr && index_.codes_resident()) {
      if (n.codes[p] != nullptr) n.codes_bytes -= n.codes[p]->MemoryBytes();
      auto codes = std::make_shared<QuantizedPosting>(std::move(e.q));
      index_.quantizer()->Pack(codes.get());
      n.codes_bytes += codes->MemoryBytes();
      n.codes[p] = std::move(codes);
    }
    ++stats_.postings_written;
  }
  for (uint32_t p : removed_) {
    if (p < cur_.size() && cur_.live[p]) {
      const auto& old = cur_.rows[p];
      change.retired.push_back({old.first_page, old.num_pages + cur_.reserved[p], old.bytes});
      change.uncache.push_back(cur_.serials[p]);
    }
    if (n.codes[p] != nullptr) n.codes_bytes -= n.codes[p]->MemoryBytes();
    n.codes[p] = nullptr;
    change.directory.removed.push_back(p);
  }
  if (up_->options_.sync && wrote) {
    if (absl::Status s = up_->writer_->Sync(); !s.ok()) return fail(s);
  }
  change.next = std::move(next_);
  change.directory.splits = std::move(splits_);
  change.directory.moves = std::move(moves_);
  up_->AddWorkStats(stats_);
  return change;
}

void SpannUpdater::AddWorkStats(const UpdateStats& work) {
  absl::MutexLock lock(&stats_mu_);
  stats_.splits += work.splits;
  stats_.merges += work.merges;
  stats_.reassigned += work.reassigned;
  stats_.gc_entries += work.gc_entries;
  stats_.postings_written += work.postings_written;
  stats_.posting_appends += work.posting_appends;
  stats_.posting_bytes_written += work.posting_bytes_written;
}

void SpannUpdater::Publish(Change change) {
  std::shared_ptr<const PostingDirectory> old = index_->directory();
  // Only this thread touches a version's `retire` list; readers never do.
  RetiredExtents& list = *old->retire;
  list.newer = change.next->retire;
  if (!change.retired.empty()) {
    list.extents = std::move(change.retired);
    list.on_release = [pages = pages_](const std::vector<storage::Extent>& extents) {
      for (const auto& e : extents) pages->Free(e.first_page, e.num_pages);
    };
  }
  index_->PublishDirectory(std::move(change.next));
  index_->Uncache(change.uncache);
  if (options_.observer != nullptr) options_.observer->OnPublished(change.directory);
}

UpdateStats SpannUpdater::stats() const {
  absl::MutexLock lock(&stats_mu_);
  return stats_;
}

}  // namespace shoal::index
