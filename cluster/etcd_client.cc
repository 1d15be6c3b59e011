#include "cluster/etcd_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::cluster {
namespace {

using Json = nlohmann::json;

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The gateway writes int64 fields as JSON strings ("revision": "12").
int64_t Int64Field(const Json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  int64_t value = 0;
  if (it->is_string() && absl::SimpleAtoi(it->get<std::string>(), &value)) return value;
  return 0;
}

std::string Base64(const std::string& text) { return absl::Base64Escape(text); }

std::string Unbase64(const Json& object, const char* name) {
  auto it = object.find(name);
  std::string out;
  if (it != object.end() && it->is_string()) absl::Base64Unescape(it->get<std::string>(), &out);
  return out;
}

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

absl::StatusOr<Json> ParseJson(const std::string& body, const std::string& what) {
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::DataLossError(absl::StrCat("etcd ", what, ": answer is not JSON: ", body));
  }
  if (json.contains("error")) {  // the gateway's error object (e.g. a lease not found)
    const std::string message = json.value("message", json.value("error", std::string()));
    if (message.find("not found") != std::string::npos) {
      return absl::NotFoundError(absl::StrCat("etcd ", what, ": ", message));
    }
    return absl::UnavailableError(absl::StrCat("etcd ", what, ": ", message));
  }
  return json;
}

RangeResult RangeFromJson(const Json& json) {
  RangeResult result;
  if (json.contains("header")) result.revision = Int64Field(json["header"], "revision");
  if (!json.contains("kvs")) return result;
  for (const Json& kv : json["kvs"]) {
    result.kvs.push_back({.key = Unbase64(kv, "key"),
                          .value = Unbase64(kv, "value"),
                          .create_revision = Int64Field(kv, "create_revision"),
                          .mod_revision = Int64Field(kv, "mod_revision"),
                          .lease = Int64Field(kv, "lease")});
  }
  return result;
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(std::string endpoint, absl::Duration timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {
  InitCurlOnce();
}

absl::StatusOr<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return absl::InternalError("etcd: curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"));
  const std::string url = endpoint_ + path;
  std::string answer;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(timeout_)));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer);
  const CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("etcd ", url, ": ", curl_easy_strerror(code)));
  }
  long http = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &http);
  if (http == 404 && answer.find("not found") != std::string::npos) {
    return absl::NotFoundError(absl::StrCat("etcd ", url, ": ", answer));
  }
  if (http != 200) {
    return absl::UnavailableError(absl::StrCat("etcd ", url, ": HTTP ", http, ": ", answer));
  }
  return answer;
}

absl::StatusOr<RangeResult> EtcdClient::RangePrefix(const std::string& prefix) {
  Json request = {{"key", Base64(prefix)}, {"range_end", Base64(PrefixEnd(prefix))}};
  absl::StatusOr<std::string> body = Post("/v3/kv/range", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "range");
  if (!json.ok()) return json.status();
  return RangeFromJson(*json);
}

absl::StatusOr<RangeResult> EtcdClient::Get(const std::string& key) {
  Json request = {{"key", Base64(key)}};
  absl::StatusOr<std::string> body = Post("/v3/kv/range", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "range");
  if (!json.ok()) return json.status();
  return RangeFromJson(*json);
}

absl::Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  Json request = {{"key", Base64(key)}, {"value", Base64(value)}};
  if (lease != 0) request["lease"] = std::to_string(lease);
  absl::StatusOr<std::string> body = Post("/v3/kv/put", request.dump());
  if (!body.ok()) return body.status();
  return ParseJson(*body, "put").status();
}

absl::Status EtcdClient::Delete(const std::string& key) {
  Json request = {{"key", Base64(key)}};
  absl::StatusOr<std::string> body = Post("/v3/kv/deleterange", request.dump());
  if (!body.ok()) return body.status();
  return ParseJson(*body, "deleterange").status();
}

absl::Status EtcdClient::DeletePrefix(const std::string& prefix) {
  Json request = {{"key", Base64(prefix)}, {"range_end", Base64(PrefixEnd(prefix))}};
  absl::StatusOr<std::string> body = Post("/v3/kv/deleterange", request.dump());
  if (!body.ok()) return body.status();
  return ParseJson(*body, "deleterange").status();
}

absl::StatusOr<bool> EtcdClient::CreateIfAbsent(const std::string& key, const std::string& value,
                                                int64_t lease) {
  Json put = {{"key", Base64(key)}, {"value", Base64(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  Json request = {
      {"compare",
       Json::array({{{"key", Base64(key)}, {"target", "CREATE"}, {"create_revision", "0"}}})},
      {"success", Json::array({{{"request_put", put}}})}};
  absl::StatusOr<std::string> body = Post("/v3/kv/txn", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "txn");
  if (!json.ok()) return json.status();
  return json->value("succeeded", false);
}

absl::StatusOr<bool> EtcdClient::CompareAndPut(const std::string& key, const std::string& value,
                                               int64_t mod_revision) {
  Json compare = {{"key", Base64(key)}};
  if (mod_revision == 0) {
    compare["target"] = "CREATE";
    compare["create_revision"] = "0";
  } else {
    compare["target"] = "MOD";
    compare["mod_revision"] = std::to_string(mod_revision);
  }
  Json request = {
      {"compare", Json::array({compare})},
      {"success",
       Json::array({{{"request_put", {{"key", Base64(key)}, {"value", Base64(value)}}}}})}};
  absl::StatusOr<std::string> body = Post("/v3/kv/txn", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "txn");
  if (!json.ok()) return json.status();
  return json->value("succeeded", false);
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(absl::Duration ttl) {
  Json request = {{"TTL", std::to_string(absl::ToInt64Seconds(ttl))}};
  absl::StatusOr<std::string> body = Post("/v3/lease/grant", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "lease grant");
  if (!json.ok()) return json.status();
  const int64_t id = Int64Field(*json, "ID");
  if (id == 0) return absl::DataLossError("etcd lease grant: no ID in " + *body);
  return id;
}

absl::Status EtcdClient::KeepAlive(int64_t lease) {
  Json request = {{"ID", std::to_string(lease)}};
  absl::StatusOr<std::string> body = Post("/v3/lease/keepalive", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> json = ParseJson(*body, "lease keepalive");
  if (!json.ok()) return json.status();
  // The answer is one stream message: {"result": {"ID": ..., "TTL": ...}}; TTL 0 = expired.
  const Json& result = json->contains("result") ? (*json)["result"] : *json;
  if (Int64Field(result, "TTL") <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, ": expired"));
  }
  return absl::OkStatus();
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  Json request = {{"ID", std::to_string(lease)}};
  absl::StatusOr<std::string> body = Post("/v3/lease/revoke", request.dump());
  if (!body.ok()) return body.status();
  return ParseJson(*body, "lease revoke").status();
}

}  // namespace shoal::cluster
