// SpannUpdater: compaction of vectors.dat (see spann_updater.h). Ids are never reused, so every
// deleted or replaced record leaves a dead slot behind; once most slots are dead the vectors
// still needed are copied into a new file that replaces the old one.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/spann/spann_builder.h"
#include "index/spann/spann_updater.h"

namespace shoal::index {
namespace {

constexpr char kCompactSuffix[] = ".compact";

}  // namespace

storage::VectorFile* SpannUpdater::vector_file() const {
  return own_vectors_ != nullptr ? own_vectors_.get() : index_->directory()->vectors.get();
}

bool SpannUpdater::VectorCompactionDue(uint64_t retained, double live_fraction,
                                       bool now_retry) const {
  if (!(live_fraction > 0)) return false;
  // A failing compaction (a full disk) is not retried after every drain: it rewrites the file.
  if (!now_retry && absl::Now() < compact_failed_at_ + kCompactRetryDelay) return false;
  const storage::VectorFile* vf = vector_file();
  if (vf->size_bytes() < kMinCompactBytes) return false;
  return static_cast<double>(retained) <
         std::min(live_fraction, 1.0) * static_cast<double>(vf->SlotCapacity());
}

absl::Status SpannUpdater::RemoveCompactionLeftover() {
  const std::string tmp = absl::StrCat(dir_, "/", kVectorFileName, kCompactSuffix);
  absl::Status s = fs_->Unlink(tmp);
  return s.ok() || absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::StatusOr<storage::VectorFile::Compaction> SpannUpdater::CompactVectors(
    uint64_t base_id, const std::function<bool(uint64_t)>& keep) {
  absl::StatusOr<storage::VectorFile::Compaction> result = RewriteVectors(base_id, keep);
  compact_failed_at_ = result.ok() ? absl::InfinitePast() : absl::Now();
  return result;
}

absl::StatusOr<storage::VectorFile::Compaction> SpannUpdater::RewriteVectors(
    uint64_t base_id, const std::function<bool(uint64_t)>& keep) {
  SHOAL_RETURN_IF_ERROR(FinishVectorSwitch());
  const std::string path = absl::StrCat(dir_, "/", kVectorFileName);
  const std::string tmp = absl::StrCat(path, kCompactSuffix);
  // Written and fdatasynced whole (even without `sync`: it replaces acknowledged data).
  SHOAL_ASSIGN_OR_RETURN(
      storage::VectorFile::Compaction result,
      storage::VectorFile::WriteCompacted(*vector_file(), tmp, base_id, keep, fs_));
  if (absl::Status s = fs_->Rename(tmp, path); !s.ok()) {
    (void)fs_->Unlink(tmp);
    return s;
  }
  // From here on vectors.dat names the new file: nothing may be written to the old one again.
  switch_pending_ = true;
  SHOAL_RETURN_IF_ERROR(FinishVectorSwitch());
  absl::MutexLock lock(&stats_mu_);
  ++stats_.vector_compactions;
  return result;
}

absl::Status SpannUpdater::FinishVectorSwitch() {
  if (!switch_pending_) return absl::OkStatus();
  // The rename must be durable before a directory change can point at a vector written only
  // to the new file (a power loss would bring the old file back without it).
  if (options_.sync) SHOAL_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  storage::VectorFile* old = vector_file();
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<storage::VectorFile> opened,
                         storage::VectorFile::Open(absl::StrCat(dir_, "/", kVectorFileName),
                                                   old->dim(), old->io(), fs_));
  if (own_vectors_ != nullptr) {
    own_vectors_ = std::move(opened);
  } else {
    // Quantized tier: searches read the file through the directory; one naming the new file
    // replaces the current one (same postings, so nothing is retired).
    Change change;
    change.next = NextVersion(*index_->directory());
    change.next->vectors = std::move(opened);
    Publish(std::move(change));
  }
  switch_pending_ = false;
  return absl::OkStatus();
}

}  // namespace shoal::index
