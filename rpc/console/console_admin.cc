// The console's admin views: index builds with progress, snapshots, the metrics sample.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rpc/console/console_api.h"
#include "rpc/console/console_call.h"

namespace shoal::rpc::console {
namespace {

Json BuildToJson(const IndexBuildState& build) {
  const absl::Time end = build.done ? build.finished : absl::Now();
  Json json = {
      {"id", build.id},       {"collection", build.collection},
      {"spec", build.spec},   {"started_by", build.started_by},
      {"phase", build.phase}, {"fraction", build.fraction},
      {"done", build.done},   {"elapsed_seconds", absl::ToDoubleSeconds(end - build.started)}};
  if (build.done && !build.status.ok()) json["error"] = ErrorToJson(build.status)["error"];
  return json;
}

}  // namespace

absl::StatusOr<Json> ConsoleApi::BuildIndex(Call& call) {
  absl::StatusOr<std::string> spec = OptionalString(call.body, "spec");
  if (!spec.ok()) return spec.status();
  if (spec->empty())
    return absl::InvalidArgumentError("spec: required, e.g. \"spann\" or \"flat\"");
  // The real name (also when asked by alias), and NOT_FOUND now rather than in the build.
  absl::StatusOr<CollectionInfo> info = call.db->DescribeCollection(call.params[0]);
  if (!info.ok()) return info.status();
  absl::StatusOr<IndexBuildState> started =
      builds_->Start(info->spec.name, *spec, call.principal.name);
  if (!started.ok()) return started.status();
  return BuildToJson(*started);
}

absl::StatusOr<Json> ConsoleApi::ListBuilds(Call& call) {
  Json list = Json::array();
  for (const IndexBuildState& build : builds_->List()) list.push_back(BuildToJson(build));
  return Json{{"builds", std::move(list)}};
}

absl::StatusOr<Json> ConsoleApi::ListSnapshots(Call& call) {
  if (!shelf_->enabled()) return Json{{"enabled", false}, {"snapshots", Json::array()}};
  absl::StatusOr<std::vector<SnapshotInfo>> all = shelf_->List();
  if (!all.ok()) return all.status();
  Json list = Json::array();
  for (const SnapshotInfo& info : *all) list.push_back(SnapshotToJson(info));
  return Json{{"enabled", true}, {"snapshots", std::move(list)}};
}

absl::StatusOr<Json> ConsoleApi::CreateSnapshot(Call& call) {
  absl::StatusOr<std::string> name = OptionalString(call.body, "name");
  if (!name.ok()) return name.status();
  absl::StatusOr<SnapshotInfo> info = shelf_->Create(*call.db, *name);
  if (!info.ok()) return info.status();
  return SnapshotToJson(*info);
}

absl::StatusOr<Json> ConsoleApi::RestoreSnapshot(Call& call) {
  // No lease is held here (see Routes): the restore waits for every lease to end.
  if (absl::Status s = shelf_->Restore(*gate_->host(), call.params[0]); !s.ok()) return s;
  return Json{{"restored", call.params[0]}};
}

absl::StatusOr<Json> ConsoleApi::Metrics(Call& call) {
  Json json = MetricsSampleToJson(gate_->metrics().Sample());
  json["unix_millis"] = absl::ToUnixMillis(absl::Now());
  return json;
}

}  // namespace shoal::rpc::console
