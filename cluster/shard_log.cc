#include "cluster/shard_log.h"

#include <nats/nats.h>

#include "absl/strings/str_cat.h"
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
  return std::unique_ptr<ShardLog>(new ShardLog(connection, js, timeout));
}

ShardLog::~ShardLog() {
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

}  // namespace shoal::cluster
