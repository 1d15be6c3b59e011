// EtcdClient::Watch: one long-lived POST to /v3/watch whose answer is a stream of JSON
// messages, one per line.
#include <curl/curl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cluster/etcd_client.h"

namespace shoal::cluster {
namespace {

using Json = nlohmann::json;

struct WatchState {
  std::string pending;  // bytes after the last complete line
  const std::function<void()>* on_change = nullptr;
  const std::function<bool()>* stop = nullptr;
  bool canceled = false;
};

size_t OnWatchBytes(char* data, size_t size, size_t count, void* opaque) {
  auto* state = static_cast<WatchState*>(opaque);
  state->pending.append(data, size * count);
  size_t newline;
  while ((newline = state->pending.find('\n')) != std::string::npos) {
    const std::string line = state->pending.substr(0, newline);
    state->pending.erase(0, newline + 1);
    Json message = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.contains("result")) continue;
    const Json& result = message["result"];
    if (result.value("canceled", false)) state->canceled = true;
    if (result.contains("events")) (*state->on_change)();
  }
  return state->canceled ? 0 : size * count;  // 0 aborts the transfer
}

// Called by curl about once a second even when no byte arrives: the chance to stop.
int OnWatchProgress(void* opaque, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<WatchState*>(opaque);
  return (*state->stop)() ? 1 : 0;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

}  // namespace

absl::Status EtcdClient::Watch(const std::string& prefix, int64_t start_revision,
                               const std::function<void()>& on_change,
                               const std::function<bool()>& stop) {
  Json create = {{"key", absl::Base64Escape(prefix)},
                 {"range_end", absl::Base64Escape(PrefixEnd(prefix))},
                 {"start_revision", std::to_string(start_revision)}};
  const std::string body = Json{{"create_request", create}}.dump();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return absl::InternalError("etcd watch: curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"));
  const std::string url = endpoint() + "/v3/watch";
  WatchState state{.on_change = &on_change, .stop = &stop};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, OnWatchBytes);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, OnWatchProgress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &state);
  const CURLcode code = curl_easy_perform(curl.get());
  if (code == CURLE_ABORTED_BY_CALLBACK && stop()) return absl::OkStatus();
  if (state.canceled) return absl::UnavailableError("etcd watch " + url + ": canceled by etcd");
  return absl::UnavailableError(absl::StrCat("etcd watch ", url, ": ", curl_easy_strerror(code)));
}

}  // namespace shoal::cluster
