#include "cluster/shard_replica.h"

#include <fcntl.h>
#include <nats/nats.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/shard_apply.h"
#include "cluster/shard_map.h"

namespace shoal::cluster {
namespace {

constexpr int kFetchBatch = 256;

absl::Status ErrnoStatus(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status FsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return ErrnoStatus("open", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : ErrnoStatus("fsync", path);
}

// The message's stream sequence (0 when it has none) and the entries pending after it.
std::pair<uint64_t, uint64_t> SequenceOf(natsMsg* msg) {
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) return {0, 0};
  const std::pair<uint64_t, uint64_t> out = {meta->Sequence.Stream, meta->NumPending};
  jsMsgMetaData_Destroy(meta);
  return out;
}

// A DB error after which an entry can never apply: it is skipped.
bool NeverApplies(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsPermissionDenied(s);
}

}  // namespace

ShardReplica::ShardReplica(DB* local, ShardLog* log, std::string node_id, CollectionSpec spec,
                           uint32_t shard, std::string state_dir, SeedFinder seed,
                           uint64_t incarnation)
    : local_(local),
      log_(log),
      node_id_(std::move(node_id)),
      spec_(std::move(spec)),
      shard_(shard),
      local_name_(ShardCollectionName(spec_.name, shard)),
      state_path_(StatePath(state_dir, local_name_)),
      seed_(std::move(seed)),
      incarnation_(incarnation) {}

std::string ShardReplica::StatePath(const std::string& state_dir, const std::string& local_name) {
  return absl::StrCat(state_dir, "/", local_name, ".applied");
}

// The file: the applied sequence, then (since incarnations exist) the map's incarnation.
absl::StatusOr<uint64_t> ShardReplica::ReadApplied() {
  std::ifstream in(state_path_);
  std::string text;
  uint64_t applied = 0, incarnation = 0;
  const bool recorded = in && std::getline(in, text);
  if (recorded && !absl::SimpleAtoi(text, &applied)) {
    return absl::DataLossError(absl::StrCat(state_path_, ": not a sequence: '", text, "'"));
  }
  if (std::getline(in, text) && !text.empty() && !absl::SimpleAtoi(text, &incarnation)) {
    return absl::DataLossError(absl::StrCat(state_path_, ": not an incarnation: '", text, "'"));
  }
  if (recorded && incarnation == incarnation_) return applied;
  // No record, or a copy of an earlier collection of this name: whatever the local copy holds
  // means nothing now (the stream, or a copy from another replica, rebuilds it).
  if (recorded) {
    std::cerr << "shoald: cluster: " << local_name_ << ": copy of an earlier incarnation ("
              << incarnation << ", now " << incarnation_ << "): starting afresh\n";
  }
  if (absl::Status s = local_->DropCollection(local_name_); !s.ok() && !absl::IsNotFound(s)) {
    return s;
  }
  return 0;
}

ShardReplica::~ShardReplica() { Stop(); }

absl::Status ShardReplica::Start() {
  absl::StatusOr<uint64_t> read = ReadApplied();
  if (!read.ok()) return read.status();
  const uint64_t applied = *read;
  CollectionSpec local{.name = local_name_, .dimension = spec_.dimension, .metric = spec_.metric};
  if (absl::Status s = local_->CreateCollection(local); !s.ok() && !absl::IsAlreadyExists(s)) {
    return s;
  }
  {
    absl::MutexLock lock(&mu_);
    applied_ = durable_ = applied;
  }
  // A copy that has applied the whole stream (a new shard's empty one, too) is ready at once.
  if (absl::StatusOr<uint64_t> last = log_->LastSequence(spec_.name, shard_); last.ok()) {
    ready_at_ = *last;
    ready_ = applied >= *last;
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ShardReplica::Stop() {
  stop_ = true;
  if (!thread_.joinable()) return;
  thread_.join();
  MaybeRecord(/*force=*/true);
}

uint64_t ShardReplica::applied() const {
  absl::MutexLock lock(&mu_);
  return applied_;
}

uint64_t ShardReplica::durable_applied() const {
  absl::MutexLock lock(&mu_);
  return durable_;
}

absl::Status ShardReplica::WaitApplied(uint64_t sequence, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, sequence]()
                     ABSL_SHARED_LOCKS_REQUIRED(mu_) { return applied_ >= sequence; };
  if (mu_.AwaitWithTimeout(absl::Condition(&reached), timeout)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("shard ", local_name_, " on node ", node_id_,
                                             ": applied sequence ", applied_, " has not reached ",
                                             sequence, " within ", absl::FormatDuration(timeout)));
}

natsSubscription* ShardReplica::Subscribe() {
  const std::string stream = StreamName(spec_.name, shard_);
  const std::string durable = absl::StrCat("node_", node_id_);
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = absl::ToInt64Milliseconds(log_->timeout());
  // The local file, not the consumer's ack floor, says where to resume: start the durable
  // consumer afresh right after it.
  (void)js_DeleteConsumer(log_->jetstream(), stream.c_str(), durable.c_str(), &options, nullptr);
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = stream.c_str();
  sub_options.Config.AckPolicy = js_AckAll;
  sub_options.Config.AckWait = int64_t{60} * 1000 * 1000 * 1000;  // ns
  const uint64_t next = applied() + 1;
  sub_options.Config.DeliverPolicy = js_DeliverByStartSequence;
  sub_options.Config.OptStartSeq = next;
  natsSubscription* sub = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  const std::string subject = StreamSubject(spec_.name, shard_);
  natsStatus s = js_PullSubscribe(&sub, log_->jetstream(), subject.c_str(), durable.c_str(),
                                  &options, &sub_options, &error);
  if (s != NATS_OK) return nullptr;
  return sub;
}

void ShardReplica::Run() {
  natsSubscription* sub = nullptr;
  while (!stop_) {
    if (!ready_ && sub != nullptr) {
      if (!ready_at_) {
        absl::StatusOr<uint64_t> last = log_->LastSequence(spec_.name, shard_);
        if (last.ok()) ready_at_ = *last;
      }
      if (ready_at_ && applied() >= *ready_at_) ready_ = true;
    }
    if (sub == nullptr) {
      if (absl::Status seeded = SeedIfBehind(); !seeded.ok()) {
        std::cerr << "shoald: cluster: " << local_name_ << ": " << seeded << " (will retry)\n";
        absl::SleepFor(absl::Milliseconds(500));
        continue;
      }
      if ((sub = Subscribe()) == nullptr) {
        absl::SleepFor(absl::Milliseconds(500));  // NATS away, or the stream not made yet
        continue;
      }
    }
    if (!ConsumeOnce(sub)) {
      natsSubscription_Destroy(sub);
      sub = nullptr;
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  if (sub != nullptr) natsSubscription_Destroy(sub);  // the durable consumer stays
}

bool ShardReplica::ConsumeOnce(natsSubscription* sub) {
  natsMsgList list = {nullptr, 0};
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, sub, kFetchBatch, 500, &error);
  if (s == NATS_TIMEOUT) {  // nothing new: make what was applied durable
    pending_ = 0;
    MaybeRecord(/*force=*/true);
    return true;
  }
  if (s != NATS_OK) return false;
  std::vector<std::pair<uint64_t, natsMsg*>> msgs;
  msgs.reserve(list.Count);
  for (int i = 0; i < list.Count; ++i) {
    const auto [sequence, pending] = SequenceOf(list.Msgs[i]);
    msgs.emplace_back(sequence, list.Msgs[i]);
    if (i + 1 == list.Count) pending_ = pending;
  }
  const auto [last, ok] = ApplyFetched(msgs, applied());
  if (last > applied()) {
    absl::MutexLock lock(&mu_);
    applied_ = last;
  }
  // The consumer's ack floor only keeps deliveries flowing; the file says where to resume.
  natsMsg* ack = nullptr;
  for (const auto& [sequence, msg] : msgs) {
    if (sequence != 0 && sequence <= last) ack = msg;
  }
  if (ack != nullptr) (void)natsMsg_Ack(ack, nullptr);
  natsMsgList_Destroy(&list);
  MaybeRecord(/*force=*/false);
  return ok;
}

std::pair<uint64_t, bool> ShardReplica::ApplyFetched(
    const std::vector<std::pair<uint64_t, natsMsg*>>& msgs, uint64_t last) {
  uint64_t through = last;  // applied so far
  ApplyGrouper grouper;
  bool ok = true;
  for (const auto& [sequence, msg] : msgs) {
    // A gap: the entries after `last` were purged (this copy was out of the shard for a
    // moment). Subscribe again; SeedIfBehind copies the shard afresh.
    if (sequence == 0 || sequence > last + 1) {
      ok = false;
      break;
    }
    if (sequence <= last) continue;
    absl::Status added = grouper.Add(sequence, natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
    if (!added.ok()) std::cerr << "shoald: cluster: " << local_name_ << ": " << added << "\n";
    last = sequence;  // an entry that does not decode can never apply: skipped
  }
  for (ApplyGroup& group : grouper.Take()) {
    absl::Status applied = ApplyOne(group);
    // Invalid, absent or not the tenant's for the DB: can never apply (checked before it
    // reached the log, so only a write that raced with another's change gets here).
    if (!applied.ok() && !NeverApplies(applied)) {
      std::cerr << "shoald: cluster: " << local_name_ << " seq " << group.last_sequence << ": "
                << applied << " (will retry)\n";
      return {through, false};
    }
    through = group.last_sequence;
  }
  return {last, ok};
}

absl::Status ShardReplica::ApplyOne(ApplyGroup& group) {
  if (group.op) return ApplyTenantOp(*local_, local_name_, group.tenant, *group.op);
  // The log's writer ran Upsert's checks on every entry (ClusterDB::CheckRecords) and the
  // grouper let no key repeat inside a group: the DB need not repeat them.
  const WriteOptions options{.sync = false, .tenant = group.tenant, .records_checked = true};
  absl::Status s = group.upserts.empty()
                       ? local_->Delete(local_name_, group.deletes, options).status()
                       : local_->Upsert(local_name_, group.upserts, options);
  const size_t size = group.upserts.empty() ? group.deletes.size() : group.upserts.size();
  if (!(absl::IsInvalidArgument(s) || absl::IsPermissionDenied(s)) || size <= 1) return s;
  // The DB refuses a batch as a whole: one record that can never apply must not take the
  // group's other entries with it, so the records go again one by one (as before grouping).
  for (size_t i = 0; i < size; ++i) {
    absl::Status one =
        group.upserts.empty()
            ? local_->Delete(local_name_, std::span<const Key>(&group.deletes[i], 1), options)
                  .status()
            : local_->Upsert(local_name_, std::span<const Record>(&group.upserts[i], 1), options);
    if (!one.ok() && !NeverApplies(one)) return one;
    if (!one.ok()) std::cerr << "shoald: cluster: " << local_name_ << ": " << one << " (skipped)\n";
  }
  return absl::OkStatus();
}

void ShardReplica::MaybeRecord(bool force) {
  const uint64_t applied = this->applied();
  if (applied <= durable_applied()) return;
  const absl::Time now = absl::Now();
  if (!force && now - last_record_ < kRecordInterval) return;
  last_record_ = now;
  absl::Status s = local_->SyncWrites();
  if (s.ok()) s = RecordApplied(applied);
  if (!s.ok()) {
    std::cerr << "shoald: cluster: " << local_name_ << ": recording applied " << applied << ": "
              << s << " (will retry)\n";
    return;
  }
  absl::MutexLock lock(&mu_);
  durable_ = applied;
}

absl::Status ShardReplica::RecordApplied(uint64_t sequence) {
  const std::string tmp = state_path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << sequence << "\n" << incarnation_ << "\n";
    if (!out.flush()) return ErrnoStatus("write", tmp);
  }
  if (absl::Status s = FsyncPath(tmp, O_RDONLY); !s.ok()) return s;
  if (::rename(tmp.c_str(), state_path_.c_str()) != 0) return ErrnoStatus("rename", tmp);
  return FsyncPath(state_path_.substr(0, state_path_.rfind('/')), O_RDONLY | O_DIRECTORY);
}

}  // namespace shoal::cluster
