#include "cluster/shard_log.h"

#include <nats/nats.h>

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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

}  // namespace

// PublishAll's publishes in flight. Each is a plain NATS request to the shard's subject with the
// reply subject "<inbox>.<id>": the payload goes to the socket from the caller's buffer (a
// JetStream async publish would first copy it into a natsMsg), and JetStream's acknowledgment (a
// PubAck in JSON) comes back to one subscription on "<inbox>.*". Entries are removed under mu by
// OnReply, or by Wait when it gives up, so a waiter (on PublishAll's stack) is never touched after
// Wait returns.
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

  ~AckTable() {
    if (subscription == nullptr) return;
    // Drained: once the wait returns, OnReply is not running and is never called again.
    if (natsSubscription_Drain(subscription) == NATS_OK) {
      natsSubscription_WaitForDrainCompletion(subscription, 2000);
    }
    natsSubscription_Destroy(subscription);
  }

  static void OnReply(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* table = static_cast<AckTable*>(closure);
    const absl::string_view subject = natsMsg_GetSubject(msg);
    uint64_t id = 0;
    if (absl::SimpleAtoi(subject.substr(subject.rfind('.') + 1), &id)) {
      absl::MutexLock lock(&table->mu);
      auto it = table->slots.find(id);
      if (it != table->slots.end()) {
        const Slot slot = it->second;
        table->slots.erase(it);
        absl::StatusOr<uint64_t> sequence = AckSequence(msg, slot.shard);
        if (sequence.ok()) {
          slot.waiter->sequences[slot.index] = *sequence;
        } else if (slot.waiter->status.ok()) {
          slot.waiter->status = sequence.status();
        }
        --slot.waiter->remaining;
      }
    }
    natsMsg_Destroy(msg);
  }

  // The stream sequence JetStream's reply gives ({"stream":...,"seq":N}), or its error
  // ({"error":{"code":...,"err_code":N,...}}; no responders: no stream takes the subject).
  static absl::StatusOr<uint64_t> AckSequence(natsMsg* msg, uint32_t shard) {
    const std::string what = absl::StrCat("publish to shard ", shard);
    if (natsMsg_IsNoResponders(msg)) return NatsStatus(what, NATS_NO_RESPONDERS, 0);
    const absl::string_view reply(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
    auto number_after = [&](absl::string_view name) -> std::optional<uint64_t> {
      const size_t at = reply.find(name);
      if (at == absl::string_view::npos) return std::nullopt;
      const absl::string_view rest = reply.substr(at + name.size());
      uint64_t value = 0;
      if (!absl::SimpleAtoi(rest.substr(0, rest.find_first_not_of("0123456789")), &value)) {
        return std::nullopt;
      }
      return value;
    };
    if (reply.find("\"error\":") != absl::string_view::npos) {
      return NatsStatus(what, NATS_ERR,
                        static_cast<int>(number_after("\"err_code\":").value_or(0)));
    }
    if (std::optional<uint64_t> sequence = number_after("\"seq\":")) return *sequence;
    return absl::UnavailableError(absl::StrCat("nats ", what, ": not an acknowledgment: ", reply));
  }

  // A reply subject for (waiter, index); the caller publishes with it.
  std::string Expect(Waiter* waiter, size_t index, uint32_t shard) {
    absl::MutexLock lock(&mu);
    const uint64_t id = next_id++;
    slots[id] = Slot{waiter, index, shard};
    return absl::StrCat(inbox, ".", id);
  }
  // The publish with `reply` failed at once: no acknowledgment will come.
  void Fail(const std::string& reply, const absl::Status& status) {
    uint64_t id = 0;
    if (!absl::SimpleAtoi(absl::string_view(reply).substr(reply.rfind('.') + 1), &id)) return;
    absl::MutexLock lock(&mu);
    auto it = slots.find(id);
    if (it == slots.end()) return;
    Waiter* waiter = it->second.waiter;
    slots.erase(it);
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

  std::string inbox;                         // set before the subscription starts
  natsSubscription* subscription = nullptr;  // on "<inbox>.*"
  absl::Mutex mu;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<uint64_t, Slot> slots ABSL_GUARDED_BY(mu);
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
  natsInbox* inbox = nullptr;
  if (s = natsInbox_Create(&inbox); s == NATS_OK) {
    acks->inbox = inbox;
    natsInbox_Destroy(inbox);
    s = natsConnection_Subscribe(&acks->subscription, connection, (acks->inbox + ".*").c_str(),
                                 &AckTable::OnReply, acks.get());
  }
  if (s != NATS_OK) {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
    return NatsStatus("subscribe to acknowledgments", s, 0);
  }
  return std::unique_ptr<ShardLog>(new ShardLog(connection, js, std::move(acks), timeout));
}

ShardLog::ShardLog(natsConnection* connection, jsCtx* js, std::unique_ptr<AckTable> acks,
                   absl::Duration timeout)
    : connection_(connection), js_(js), acks_(std::move(acks)), timeout_(timeout) {}

ShardLog::~ShardLog() {
  acks_.reset();  // its subscription drained first: OnReply is done before the connection goes
  jsCtx_Destroy(js_);
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
  for (size_t i = 0; i < payloads.size(); ++i) {
    const auto& [shard, payload] = payloads[i];
    const std::string subject = StreamSubject(collection, shard);
    const std::string reply = acks_->Expect(&waiter, i, shard);
    natsStatus s = natsConnection_PublishRequest(connection_, subject.c_str(), reply.c_str(),
                                                 payload.data(), static_cast<int>(payload.size()));
    if (s != NATS_OK) acks_->Fail(reply, NatsStatus("publish to " + subject, s, 0));
  }
  // An acknowledgment that does not come within the timeout (NATS or JetStream away) fails the
  // write.
  return acks_->Wait(&waiter, timeout_);
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
