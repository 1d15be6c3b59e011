#include "cluster/shard_log.h"

#include <nats/nats.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "cluster/shard_map.h"

namespace shoal::cluster {
namespace {

jsOptions RequestOptions(absl::Duration timeout) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = absl::ToInt64Milliseconds(timeout);
  return options;
}

constexpr int64_t kMaxPendingPublishes = 4096;

}  // namespace

// PublishAll's messages in flight: each (owned by the NATS client until OnAck) names its
// waiter and slot. Entries are removed under mu by OnAck, or by Wait when it gives up, so a
// waiter (on PublishAll's stack) is never touched after Wait returns.
struct ShardLog::AckTable {
  struct Waiter {
    size_t remaining = 0;
    std::vector<uint64_t> sequences;
    absl::Status status;  // the first error
  };
  struct Slot {
    Waiter* waiter;
    size_t index;
    uint32_t shard;
  };

  static void OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
    auto* table = static_cast<AckTable*>(closure);
    {
      absl::MutexLock lock(&table->mu);
      auto it = table->slots.find(msg);
      if (it != table->slots.end()) {
        const Slot slot = it->second;
        table->slots.erase(it);
        if (ack != nullptr) {
          slot.waiter->sequences[slot.index] = ack->Sequence;
        } else if (slot.waiter->status.ok()) {
          slot.waiter->status = NatsStatus(absl::StrCat("publish to shard ", slot.shard),
                                           error != nullptr ? error->Err : NATS_ERR,
                                           error != nullptr ? error->ErrCode : 0);
        }
        --slot.waiter->remaining;
      }
    }
    natsMsg_Destroy(msg);
  }

  void Expect(natsMsg* msg, Waiter* waiter, size_t index, uint32_t shard) {
    absl::MutexLock lock(&mu);
    slots[msg] = Slot{waiter, index, shard};
  }
  // The publish of `msg` failed at once: the client never owned it.
  void Fail(natsMsg* msg, const absl::Status& status) {
    absl::MutexLock lock(&mu);
    auto it = slots.find(msg);
    if (it == slots.end()) return;
    Waiter* waiter = it->second.waiter;
    slots.erase(it);
    if (waiter->status.ok()) waiter->status = status;
    --waiter->remaining;
  }
  void Fail(Waiter* waiter, const absl::Status& status) {
    absl::MutexLock lock(&mu);
    if (waiter->status.ok()) waiter->status = status;
    --waiter->remaining;
  }
  absl::StatusOr<std::vector<uint64_t>> Wait(Waiter* waiter, absl::Duration timeout) {
    absl::MutexLock lock(&mu);
    auto done = [waiter] { return waiter->remaining == 0; };
    if (!mu.AwaitWithTimeout(absl::Condition(&done), timeout)) {
      for (auto it = slots.begin(); it != slots.end();) {
        if (it->second.waiter == waiter) {
          slots.erase(it++);
        } else {
          ++it;
        }
      }
      return absl::UnavailableError(absl::StrCat("nats: ", waiter->remaining,
                                                 " publish acknowledgments missing after ",
                                                 absl::FormatDuration(timeout)));
    }
    if (!waiter->status.ok()) return waiter->status;
    return std::move(waiter->sequences);
  }

  absl::Mutex mu;
  absl::flat_hash_map<natsMsg*, Slot> slots ABSL_GUARDED_BY(mu);
};

absl::Status NatsStatus(const std::string& what, int nats_status, int js_error_code) {
  const std::string message = absl::StrCat(
      "nats ", what, ": ", natsStatus_GetText(static_cast<natsStatus>(nats_status)),
      js_error_code != 0 ? absl::StrCat(" (JetStream error ", js_error_code, ")") : std::string());
  if (js_error_code == JSStreamNotFoundErr || js_error_code == JSConsumerNotFoundErr) {
    return absl::NotFoundError(message);
  }
  return absl::UnavailableError(message);
}

absl::StatusOr<std::unique_ptr<ShardLog>> ShardLog::Connect(const std::string& url,
                                                            absl::Duration timeout) {
  natsOptions* options = nullptr;
  if (natsStatus s = natsOptions_Create(&options); s != NATS_OK) {
    return NatsStatus("options", s, 0);
  }
  natsOptions_SetURL(options, url.c_str());
  natsOptions_SetTimeout(options, absl::ToInt64Milliseconds(timeout));
  natsOptions_SetAllowReconnect(options, true);
  natsOptions_SetMaxReconnect(options, -1);  // for as long as the process lives
  natsOptions_SetReconnectWait(options, 200);
  natsConnection* connection = nullptr;
  natsStatus s = natsConnection_Connect(&connection, options);
  natsOptions_Destroy(options);
  if (s != NATS_OK) return NatsStatus("connect to " + url, s, 0);
  jsOptions js_options = RequestOptions(timeout);
  jsCtx* js = nullptr;
  if (s = natsConnection_JetStream(&js, connection, &js_options); s != NATS_OK) {
    natsConnection_Destroy(connection);
    return NatsStatus("JetStream context", s, 0);
  }
  auto acks = std::make_unique<AckTable>();
  jsOptions async_options = RequestOptions(timeout);
  async_options.PublishAsync.AckHandler = &AckTable::OnAck;
  async_options.PublishAsync.AckHandlerClosure = acks.get();
  async_options.PublishAsync.MaxPending = kMaxPendingPublishes;
  jsCtx* async_js = nullptr;
  if (s = natsConnection_JetStream(&async_js, connection, &async_options); s != NATS_OK) {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
    return NatsStatus("JetStream context", s, 0);
  }
  return std::unique_ptr<ShardLog>(
      new ShardLog(connection, js, async_js, std::move(acks), timeout));
}

ShardLog::ShardLog(natsConnection* connection, jsCtx* js, jsCtx* async_js,
                   std::unique_ptr<AckTable> acks, absl::Duration timeout)
    : connection_(connection),
      js_(js),
      async_js_(async_js),
      acks_(std::move(acks)),
      timeout_(timeout) {}

ShardLog::~ShardLog() {
  jsCtx_Destroy(js_);
  jsCtx_Destroy(async_js_);
  natsConnection_Destroy(connection_);
}

absl::StatusOr<uint32_t> ShardLog::EnsureStream(const std::string& collection, uint32_t shard,
                                                uint32_t replicas) {
  const std::string name = StreamName(collection, shard);
  const std::string subject = StreamSubject(collection, shard);
  const char* subjects[] = {subject.c_str()};
  jsOptions options = RequestOptions(timeout_);
  for (uint32_t copies : {replicas, 1u}) {
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = name.c_str();
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    config.Replicas = copies;
    jsStreamInfo* info = nullptr;
    jsErrCode error = static_cast<jsErrCode>(0);
    natsStatus s = js_AddStream(&info, js_, &config, &options, &error);
    if (s == NATS_OK) {
      const uint32_t kept = info->Config != nullptr ? info->Config->Replicas : copies;
      jsStreamInfo_Destroy(info);
      return kept;
    }
    // A single JetStream server refuses replicas > 1; settle for one copy.
    const bool too_many = error == JSStreamReplicasNotSupportedErr ||
                          error == JSInsufficientResourcesErr || error == JSClusterNotActiveErr;
    if (copies > 1 && too_many) continue;
    // An existing stream with other settings (e.g. made with fewer replicas) is fine as is.
    if (error == JSStreamNameExistErr) {
      if (s = js_GetStreamInfo(&info, js_, name.c_str(), &options, &error); s == NATS_OK) {
        const uint32_t kept = info->Config != nullptr ? info->Config->Replicas : 1;
        jsStreamInfo_Destroy(info);
        return kept;
      }
    }
    return NatsStatus("add stream " + name, s, error);
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<uint64_t> ShardLog::Publish(const std::string& collection, uint32_t shard,
                                           const std::string& payload) {
  const std::string subject = StreamSubject(collection, shard);
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = absl::ToInt64Milliseconds(timeout_);
  jsPubAck* ack = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&ack, js_, subject.c_str(), payload.data(),
                            static_cast<int>(payload.size()), &options, &error);
  if (s != NATS_OK) return NatsStatus("publish to " + subject, s, error);
  const uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

absl::StatusOr<std::vector<uint64_t>> ShardLog::PublishAll(
    const std::string& collection, std::span<const std::pair<uint32_t, std::string>> payloads) {
  AckTable::Waiter waiter{.remaining = payloads.size(),
                          .sequences = std::vector<uint64_t>(payloads.size())};
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = absl::ToInt64Milliseconds(timeout_);  // then OnAck hears NATS_TIMEOUT
  for (size_t i = 0; i < payloads.size(); ++i) {
    const auto& [shard, payload] = payloads[i];
    const std::string subject = StreamSubject(collection, shard);
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, payload.data(),
                                  static_cast<int>(payload.size()));
    if (s == NATS_OK) {
      acks_->Expect(msg, &waiter, i, shard);
      natsMsg* owned = msg;
      s = js_PublishMsgAsync(async_js_, &owned, &options);
      if (s != NATS_OK) acks_->Fail(msg, NatsStatus("publish to " + subject, s, 0));
      natsMsg_Destroy(owned);  // nullptr (a no-op) once the library owns it
    } else {
      acks_->Fail(&waiter, NatsStatus("message for " + subject, s, 0));
    }
  }
  // OnAck hears every message within MaxWait; the margin covers a lost timer.
  return acks_->Wait(&waiter, timeout_ + absl::Seconds(1));
}

absl::StatusOr<ShardLog::StreamState> ShardLog::State(const std::string& collection,
                                                      uint32_t shard) {
  const std::string name = StreamName(collection, shard);
  jsOptions options = RequestOptions(timeout_);
  jsStreamInfo* info = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&info, js_, name.c_str(), &options, &error);
  if (s != NATS_OK) return NatsStatus("stream info " + name, s, error);
  // An empty stream reports first = last + 1 (or 0 when nothing was ever written).
  const StreamState state{
      .first = info->State.Msgs == 0 ? info->State.LastSeq + 1 : info->State.FirstSeq,
      .last = info->State.LastSeq};
  jsStreamInfo_Destroy(info);
  return state;
}

absl::StatusOr<uint64_t> ShardLog::LastSequence(const std::string& collection, uint32_t shard) {
  SHOAL_ASSIGN_OR_RETURN(const StreamState state, State(collection, shard));
  return state.last;
}

absl::StatusOr<uint64_t> ShardLog::FirstSequence(const std::string& collection, uint32_t shard) {
  SHOAL_ASSIGN_OR_RETURN(const StreamState state, State(collection, shard));
  return state.first;
}

absl::Status ShardLog::Purge(const std::string& collection, uint32_t shard, uint64_t keep_from) {
  const std::string name = StreamName(collection, shard);
  jsOptions options = RequestOptions(timeout_);
  options.Stream.Purge.Sequence = keep_from;
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_PurgeStream(js_, name.c_str(), &options, &error);
  if (s != NATS_OK) return NatsStatus("purge " + name, s, error);
  return absl::OkStatus();
}

absl::Status ShardLog::DeleteStream(const std::string& collection, uint32_t shard) {
  const std::string name = StreamName(collection, shard);
  jsOptions options = RequestOptions(timeout_);
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_DeleteStream(js_, name.c_str(), &options, &error);
  if (s != NATS_OK) return NatsStatus("delete stream " + name, s, error);
  return absl::OkStatus();
}

}  // namespace shoal::cluster
