// shoal: a one-shot command-line client of shoald. Each command is one RPC; the response is
// printed as JSON and any error as "error: CODE: message" on stderr with exit status 1.
// (The interactive admin shell, output formats and `shoal ingest` grow from here.)
//
//   shoal [--server HOST:PORT] health
//   shoal list | describe NAME | drop NAME
//   shoal create NAME --dimension D [--metric l2|ip|cosine]
//   shoal upsert NAME KEY V1,V2,... [--sync]     KEY: a number (uint64) or any other string
//   shoal get NAME KEY... | delete NAME KEY...
//   shoal search NAME V1,V2,... [--k K]
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "shoal/v1/collection_service.grpc.pb.h"
#include "shoal/v1/search_service.grpc.pb.h"
#include "shoal/v1/vector_service.grpc.pb.h"

namespace {

namespace v1 = ::shoal::v1;

struct Args {
  std::string server = "127.0.0.1:50051";
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;  // --name value, or --name "" for switches
};

int Usage() {
  std::fprintf(stderr,
               "usage: shoal [--server HOST:PORT] COMMAND ...\n"
               "  health | list | describe NAME | drop NAME\n"
               "  create NAME --dimension D [--metric l2|ip|cosine]\n"
               "  upsert NAME KEY V1,V2,... [--sync]\n"
               "  get NAME KEY... | delete NAME KEY... [--sync]\n"
               "  search NAME V1,V2,... [--k K]\n");
  return 2;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
    } else if (s == "--sync") {
      a.flags["sync"] = "";
    } else if (i + 1 < argc) {
      a.flags[s.substr(2)] = argv[++i];
    }
  }
  if (auto it = a.flags.find("server"); it != a.flags.end()) a.server = it->second;
  return a;
}

int Fail(const grpc::Status& s) {
  // gRPC and absl share the canonical code numbering.
  const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code()));
  std::fprintf(stderr, "error: %s: %s\n", code.c_str(), s.error_message().c_str());
  return 1;
}

int Print(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, opts);
  std::printf("%s\n", json.c_str());
  return 0;
}

template <typename Call, typename Response>
int Run(Call call, Response* response) {
  grpc::Status s = call();
  return s.ok() ? Print(*response) : Fail(s);
}

v1::Key ParseKey(const std::string& s) {
  v1::Key k;
  uint64_t id = 0;
  if (absl::SimpleAtoi(s, &id)) {
    k.set_id(id);
  } else {
    k.set_name(s);
  }
  return k;
}

bool ParseVector(const std::string& s, google::protobuf::RepeatedField<float>* out) {
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    float v = 0;
    if (!absl::SimpleAtof(part, &v)) {
      std::fprintf(stderr, "error: not a number: '%s'\n", std::string(part).c_str());
      return false;
    }
    out->Add(v);
  }
  return true;
}

v1::Metric ParseMetric(const std::string& s) {
  if (s == "ip" || s == "inner_product") return v1::METRIC_INNER_PRODUCT;
  if (s == "cosine") return v1::METRIC_COSINE;
  return v1::METRIC_L2;
}

int Dispatch(const Args& a, const std::shared_ptr<grpc::Channel>& ch) {
  const auto& p = a.positional;
  const std::string& cmd = p[0];
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto flag = [&](const std::string& name, const std::string& def) {
    auto it = a.flags.find(name);
    return it == a.flags.end() ? def : it->second;
  };
  if (cmd == "health") {
    grpc::health::v1::HealthCheckRequest req;
    grpc::health::v1::HealthCheckResponse resp;
    auto stub = grpc::health::v1::Health::NewStub(ch);
    return Run([&] { return stub->Check(&ctx, req, &resp); }, &resp);
  }
  auto collections = v1::CollectionService::NewStub(ch);
  auto vectors = v1::VectorService::NewStub(ch);
  if (cmd == "list") {
    v1::ListCollectionsRequest req;
    v1::ListCollectionsResponse resp;
    return Run([&] { return collections->ListCollections(&ctx, req, &resp); }, &resp);
  }
  if (p.size() < 2) return Usage();
  if (cmd == "describe") {
    v1::DescribeCollectionRequest req;
    v1::DescribeCollectionResponse resp;
    req.set_name(p[1]);
    return Run([&] { return collections->DescribeCollection(&ctx, req, &resp); }, &resp);
  }
  if (cmd == "drop") {
    v1::DropCollectionRequest req;
    v1::DropCollectionResponse resp;
    req.set_name(p[1]);
    return Run([&] { return collections->DropCollection(&ctx, req, &resp); }, &resp);
  }
  if (cmd == "create") {
    v1::CreateCollectionRequest req;
    v1::CreateCollectionResponse resp;
    req.mutable_spec()->set_name(p[1]);
    req.mutable_spec()->set_dimension(std::strtoul(flag("dimension", "0").c_str(), nullptr, 10));
    req.mutable_spec()->set_metric(ParseMetric(flag("metric", "l2")));
    return Run([&] { return collections->CreateCollection(&ctx, req, &resp); }, &resp);
  }
  if (cmd == "get" || cmd == "delete") {
    if (p.size() < 3) return Usage();
    if (cmd == "get") {
      v1::GetRequest req;
      v1::GetResponse resp;
      req.set_collection(p[1]);
      for (size_t i = 2; i < p.size(); ++i) *req.add_keys() = ParseKey(p[i]);
      return Run([&] { return vectors->Get(&ctx, req, &resp); }, &resp);
    }
    v1::DeleteRequest req;
    v1::DeleteResponse resp;
    req.set_collection(p[1]);
    req.set_sync(a.flags.contains("sync"));
    for (size_t i = 2; i < p.size(); ++i) *req.add_keys() = ParseKey(p[i]);
    return Run([&] { return vectors->Delete(&ctx, req, &resp); }, &resp);
  }
  if (cmd == "upsert" && p.size() == 4) {
    v1::UpsertRequest req;
    v1::UpsertResponse resp;
    req.set_collection(p[1]);
    req.set_sync(a.flags.contains("sync"));
    v1::Record* r = req.add_records();
    *r->mutable_key() = ParseKey(p[2]);
    if (!ParseVector(p[3], r->mutable_vector())) return 2;
    return Run([&] { return vectors->Upsert(&ctx, req, &resp); }, &resp);
  }
  if (cmd == "search" && p.size() == 3) {
    v1::SearchRequest req;
    v1::SearchResponse resp;
    req.set_collection(p[1]);
    if (!ParseVector(p[2], req.mutable_queries())) return 2;
    req.set_dimension(req.queries_size());
    req.set_k(std::strtoul(flag("k", "10").c_str(), nullptr, 10));
    auto stub = v1::SearchService::NewStub(ch);
    return Run([&] { return stub->Search(&ctx, req, &resp); }, &resp);
  }
  return Usage();
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  if (args.positional.empty()) return Usage();
  auto channel = grpc::CreateChannel(args.server, grpc::InsecureChannelCredentials());
  return Dispatch(args, channel);
}
