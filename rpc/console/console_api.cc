#include "rpc/console/console_api.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "rpc/console/console_call.h"

namespace shoal::rpc::console {
namespace {

// The path's segments after the leading '/', e.g. {"api", "collections", "x"}.
std::vector<std::string> Segments(absl::string_view path) {
  if (absl::ConsumePrefix(&path, "/")) {
  }
  return absl::StrSplit(path, '/');
}

// Whether `path` matches `pattern`; the segments matched by '*' go to *params.
bool Match(const std::vector<std::string>& path, const char* pattern,
           std::vector<std::string>* params) {
  std::vector<std::string> want = Segments(pattern);
  if (want.size() != path.size()) return false;
  params->clear();
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "*") {
      if (path[i].empty()) return false;
      params->push_back(path[i]);
    } else if (want[i] != path[i]) {
      return false;
    }
  }
  return true;
}

HttpResponse JsonResponse(int status, const Json& json) {
  // Invalid UTF-8 in a stored string (keys, attributes) is replaced rather than thrown on.
  return {.status = status, .body = json.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

HttpResponse ErrorResponse(const absl::Status& status) {
  return JsonResponse(HttpStatusOf(status.code()), ErrorToJson(status));
}

}  // namespace

const std::vector<ConsoleApi::Route>& ConsoleApi::Routes() {
  using R = ConsoleApi;
  constexpr Role kRead = Role::kReadOnly;
  constexpr Role kWrite = Role::kReadWrite;
  constexpr Role kAdmin = Role::kAdmin;
  // What a tenant-bound key may do (console_api.h): kAnyKey reads nothing of a tenant's,
  // kScoped pins the key's tenant in the handler, kWholeCollection (the default) refuses it.
  constexpr TenantAccess kAny = TenantAccess::kAnyKey;
  constexpr TenantAccess kScoped = TenantAccess::kScoped;
  // clang-format off
  static const auto* routes = new std::vector<Route>{
      {"GET", "/api/session", {"Console/Session", kRead, kAny}, &R::Session, false, true},
      {"GET", "/api/collections", {"Console/ListCollections", kRead, kAny}, &R::ListCollections,
       true, true},
      {"POST", "/api/collections", {"Console/CreateCollection", kWrite}, &R::CreateCollection,
       true, true},
      {"GET", "/api/collections/*", {"Console/DescribeCollection", kRead, kAny},
       &R::DescribeCollection, true, true},
      {"DELETE", "/api/collections/*", {"Console/DropCollection", kWrite}, &R::DropCollection,
       true, true},
      {"POST", "/api/collections/*/get", {"Console/Get", kRead, kScoped}, &R::GetRecords, true,
       true},
      {"POST", "/api/collections/*/browse", {"Console/Browse", kRead, kScoped}, &R::Browse, true,
       true},
      {"POST", "/api/collections/*/search", {"Console/Search", kRead, kScoped}, &R::Search, true,
       true},
      {"POST", "/api/collections/*/build", {"Console/BuildIndex", kAdmin}, &R::BuildIndex, true,
       true},
      // The builds page polls twice a second: not counted, like the metrics poll.
      {"GET", "/api/builds", {"Console/ListBuilds", kRead}, &R::ListBuilds, false, false},
      {"GET", "/api/snapshots", {"Console/ListSnapshots", kAdmin}, &R::ListSnapshots, false,
       true},
      {"POST", "/api/snapshots", {"Console/Snapshot", kAdmin}, &R::CreateSnapshot, true, true},
      {"POST", "/api/snapshots/*/restore", {"Console/Restore", kAdmin}, &R::RestoreSnapshot,
       false, true},
      {"GET", "/api/metrics", {"Console/Metrics", kRead, kAny}, &R::Metrics, false, false},
      {"GET", "/api/collections/*/tenants", {"Console/ListTenants", kRead, kScoped},
       &R::ListTenants, true, true},
      {"GET", "/api/caches", {"Console/ListCaches", kRead, kScoped}, &R::ListCaches, true, true},
      // The caches page polls its cache every second for the hit-rate chart: not counted.
      {"GET", "/api/caches/*", {"Console/DescribeCache", kRead, kScoped}, &R::DescribeCache,
       true, false},
      {"POST", "/api/caches/*/policy", {"Console/SetCachePolicy", kAdmin}, &R::SetCachePolicy,
       true, true},
  };
  // clang-format on
  return *routes;
}

HttpResponse ConsoleApi::Handle(const HttpRequest& request) {
  const std::vector<std::string> path = Segments(request.path);
  std::vector<std::string> params;
  const Route* route = nullptr;
  bool path_known = false;
  for (const Route& candidate : Routes()) {
    if (!Match(path, candidate.pattern, &params)) continue;
    path_known = true;
    if (request.method == candidate.method) {
      route = &candidate;
      break;
    }
  }
  if (route == nullptr) {
    if (!path_known) {
      return ErrorResponse(absl::NotFoundError(absl::StrCat("path: no API at ", request.path)));
    }
    HttpResponse response = ErrorResponse(absl::InvalidArgumentError(
        absl::StrCat("method: ", request.method, " is not allowed on ", request.path)));
    response.status = 405;
    return response;
  }
  const absl::Time start = absl::Now();
  Call call{.request = request, .params = std::move(params)};
  const absl::Status allowed = CheckBrowserOrigin(request);
  absl::StatusOr<Json> answer = allowed.ok() ? Dispatch(*route, call) : allowed;
  if (route->record) gate_->Finish(route->rpc, start, answer.status());
  if (!answer.ok()) return ErrorResponse(answer.status());
  return JsonResponse(200, *answer);
}

absl::Status ConsoleApi::CheckBrowserOrigin(const HttpRequest& request) const {
  absl::Status refused;
  if (request.method == "POST" &&
      !absl::StartsWith(absl::AsciiStrToLower(request.content_type), "application/json")) {
    refused = absl::InvalidArgumentError(absl::StrCat(
        "content_type: a POST must be application/json, not \"", request.content_type, "\""));
  } else if (!request.origin.empty() && request.origin != absl::StrCat("http://", request.host)) {
    refused = absl::PermissionDeniedError(absl::StrCat(
        "origin: ", request.origin, " is not this console's (http://", request.host, ")"));
  } else if (!gate_->authenticates() && !request.host.empty()) {
    absl::string_view host = request.host;
    if (!absl::StartsWith(host, "[")) host = host.substr(0, host.rfind(':'));
    const bool address = absl::StartsWith(host, "[") || host == "localhost" ||
                         host.find_first_not_of("0123456789.") == absl::string_view::npos;
    if (!address) {
      refused = absl::PermissionDeniedError(absl::StrCat(
          "host: ", request.host,
          " is not an IP address or localhost (without API keys the console answers only "
          "those)"));
    }
  }
  if (!refused.ok()) gate_->metrics().RecordRejection("cross_origin");
  return refused;
}

absl::StatusOr<Json> ConsoleApi::Dispatch(const Route& route, Call& call) {
  absl::StatusOr<Principal> principal =
      gate_->AdmitPresented(call.request.authorization, call.request.x_api_key, route.rpc);
  if (!principal.ok()) return principal.status();
  call.principal = *std::move(principal);
  if (absl::Status s = gate_->CheckSize(call.request.body.size(), "request"); !s.ok()) return s;
  absl::StatusOr<Json> body = ParseBody(call.request.body);
  if (!body.ok()) return body.status();
  call.body = *std::move(body);
  // nlohmann::json throws on misuse; this is the one place that catches it, should a handler
  // have missed a type check.
  try {
    if (!route.lease) return (this->*route.handler)(call);
    DbHost::Lease lease = gate_->Acquire();
    if (!lease.ok()) return lease.status();
    call.db = &*lease;
    return (this->*route.handler)(call);
  } catch (const Json::exception& e) {
    return absl::InternalError(absl::StrCat("console: ", e.what()));
  }
}

absl::StatusOr<Json> ConsoleApi::Session(Call& call) {
  const Role role = call.principal.role;
  // A tenant-bound key may write its own records over gRPC, but what the console writes
  // (collections, builds, policies, snapshots) acts on whole collections: the page offers it
  // nothing of that (and the API refuses it).
  const bool bound = !call.principal.tenant.empty();
  return Json{
      {"name", call.principal.name},
      {"role", RoleName(role)},
      {"tenant", call.principal.tenant},
      {"authenticates", gate_->authenticates()},
      {"can_write", role >= Role::kReadWrite && !bound},
      {"can_admin", role >= Role::kAdmin && !bound},
      {"features", {{"snapshots", shelf_->enabled()}, {"tenants", true}, {"caches", true}}}};
}

namespace {

// A collection's JSON; for a tenant-bound caller with its tenant's counts under "tenant" (null
// where the tenant does not exist in that collection).
absl::StatusOr<Json> CollectionJson(DB& db, const CollectionInfo& info, const Principal& caller) {
  Json json = CollectionInfoToJson(info);
  if (caller.tenant.empty()) return json;
  absl::StatusOr<TenantInfo> tenant = db.DescribeTenant(info.spec.name, caller.tenant);
  if (absl::IsNotFound(tenant.status())) {
    json["tenant"] = nullptr;
  } else if (!tenant.ok()) {
    return tenant.status();
  } else {
    json["tenant"] = TenantInfoToJson(*tenant);
  }
  return json;
}

}  // namespace

absl::StatusOr<Json> ConsoleApi::ListCollections(Call& call) {
  absl::StatusOr<std::vector<CollectionInfo>> infos = call.db->ListCollections();
  if (!infos.ok()) return infos.status();
  Json list = Json::array();
  for (const CollectionInfo& info : *infos) {
    absl::StatusOr<Json> json = CollectionJson(*call.db, info, call.principal);
    if (!json.ok()) return json.status();
    list.push_back(*std::move(json));
  }
  return Json{{"collections", std::move(list)}};
}

absl::StatusOr<Json> ConsoleApi::CreateCollection(Call& call) {
  absl::StatusOr<std::string> name = OptionalString(call.body, "name");
  if (!name.ok()) return name.status();
  absl::StatusOr<uint32_t> dimension =
      OptionalUint(call.body, "dimension", 0, 0, std::numeric_limits<uint32_t>::max());
  if (!dimension.ok()) return dimension.status();
  absl::StatusOr<std::string> metric_name = OptionalString(call.body, "metric");
  if (!metric_name.ok()) return metric_name.status();
  std::optional<Metric> metric = ParseMetric(metric_name->empty() ? "l2" : *metric_name);
  if (!metric) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric: \"", *metric_name, "\" is not l2, ip or cosine"));
  }
  CollectionSpec spec{.name = *name, .dimension = *dimension, .metric = *metric};
  if (absl::Status s = call.db->CreateCollection(spec); !s.ok()) return s;
  absl::StatusOr<CollectionInfo> info = call.db->DescribeCollection(spec.name);
  if (!info.ok()) return info.status();
  return CollectionInfoToJson(*info);
}

absl::StatusOr<Json> ConsoleApi::DescribeCollection(Call& call) {
  absl::StatusOr<CollectionInfo> info = call.db->DescribeCollection(call.params[0]);
  if (!info.ok()) return info.status();
  return CollectionJson(*call.db, *info, call.principal);
}

absl::StatusOr<Json> ConsoleApi::DropCollection(Call& call) {
  if (absl::Status s = call.db->DropCollection(call.params[0]); !s.ok()) return s;
  return Json{{"dropped", call.params[0]}};
}

absl::StatusOr<Json> ConsoleApi::ListTenants(Call& call) {
  // As TenantService/ListTenants: a tenant-bound key sees only its own tenant (an empty list
  // where it does not exist in this collection), never another's name.
  const std::string& collection = call.params[0];
  Json list = Json::array();
  if (!call.principal.tenant.empty()) {
    absl::StatusOr<TenantInfo> own = call.db->DescribeTenant(collection, call.principal.tenant);
    if (absl::IsNotFound(own.status())) {
      // An unknown collection stays NOT_FOUND.
      absl::StatusOr<CollectionInfo> info = call.db->DescribeCollection(collection);
      if (!info.ok()) return info.status();
    } else if (!own.ok()) {
      return own.status();
    } else {
      list.push_back(TenantInfoToJson(*own));
    }
    return Json{{"tenants", std::move(list)}, {"more", false}};
  }
  absl::StatusOr<TenantPage> page = call.db->ListTenants(collection, 1000, "");
  if (!page.ok()) return page.status();
  for (const TenantInfo& tenant : page->tenants) list.push_back(TenantInfoToJson(tenant));
  return Json{{"tenants", std::move(list)}, {"more", !page->next_page_token.empty()}};
}

}  // namespace shoal::rpc::console
