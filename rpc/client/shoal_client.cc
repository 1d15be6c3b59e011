// Client: connection, health, collections, aliases, records and search. Admin calls and the
// Ingest stream are in client_admin.cc, tenant calls in client_tenants.cc.
#include "rpc/client/shoal_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/client/client_internal.h"
#include "rpc/convert.h"

namespace shoal::client {
namespace internal {

std::unique_ptr<grpc::ClientContext> NewContext(const ConnectOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options.timeout));
  if (!options.api_key.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", options.api_key));
  }
  return context;
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // gRPC and absl share the canonical code numbering.
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

CollectionInfo InfoFromProto(const v1::CollectionInfo& proto) {
  CollectionInfo info;
  info.spec.name = proto.spec().name();
  info.spec.dimension = proto.spec().dimension();
  absl::StatusOr<Metric> metric = rpc::MetricFromProto(proto.spec().metric(), "metric");
  if (metric.ok()) info.spec.metric = *metric;
  info.spec.shards = proto.spec().shards();
  info.spec.replication = proto.spec().replication();
  info.num_vectors = proto.num_vectors();
  info.index = proto.index();
  info.index_ram_bytes = proto.index_ram_bytes();
  info.tenant_ram_bytes = proto.tenant_ram_bytes();
  info.unindexed_vectors = proto.unindexed_vectors();
  info.aliases.assign(proto.aliases().begin(), proto.aliases().end());
  info.damage = proto.damage();
  return info;
}

absl::StatusOr<std::vector<std::vector<Hit>>> HitsFromProto(const v1::SearchResponse& response,
                                                            SearchStats* stats) {
  std::vector<std::vector<Hit>> out(response.results_size());
  for (int q = 0; q < response.results_size(); ++q) {
    const v1::QueryResult& result = response.results(q);
    out[q].reserve(result.hits_size());
    for (const v1::Hit& proto : result.hits()) {
      absl::StatusOr<Hit> hit = rpc::HitFromProto(proto, "hit");
      if (!hit.ok()) return hit.status();
      out[q].push_back(*std::move(hit));
    }
  }
  if (stats != nullptr) {
    stats->postings_read = response.stats().postings_read();
    stats->vectors_scored = response.stats().vectors_scored();
    stats->bytes_read = response.stats().bytes_read();
    stats->cache_hits = response.stats().cache_hits();
    stats->full_vectors_read = response.stats().full_vectors_read();
    stats->warnings.assign(response.warnings().begin(), response.warnings().end());
  }
  return out;
}

void SearchToProto(const std::string& collection, std::span<const float> queries,
                   const SearchParams& params, v1::SearchRequest& request) {
  request.set_collection(collection);
  request.mutable_queries()->Add(queries.begin(), queries.end());
  request.set_k(params.k);
  request.set_max_postings(params.max_postings);
  request.set_pruning_ratio(params.pruning_ratio);
  request.set_target_recall(params.target_recall);
  if (params.filter != nullptr) rpc::FilterToProto(*params.filter, request.mutable_filter());
  request.set_include_stats(params.stats != nullptr);
  request.set_tenant(params.tenant);
  request.set_with_attributes(params.with_attributes);
  request.set_with_vectors(params.with_vectors);
  request.mutable_consistency()->set_read_your_writes(params.consistency.read_your_writes);
  request.mutable_consistency()->set_min_applied_sequence(params.consistency.min_applied_sequence);
}

}  // namespace internal

namespace {

using internal::FromGrpc;
using internal::HitsFromProto;
using internal::InfoFromProto;
using internal::NewContext;
using internal::SearchToProto;

template <typename Message>
void AddRecords(std::span<const Record> records, Message& request) {
  request.mutable_records()->Reserve(static_cast<int>(records.size()));
  for (const Record& record : records) rpc::RecordToProto(record, request.add_records());
}

}  // namespace

Client::Client(std::unique_ptr<Stubs> stubs, ConnectOptions options)
    : stubs_(std::move(stubs)), options_(std::move(options)) {}

Client::~Client() = default;

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& address,
                                                        const ConnectOptions& options) {
  if (address.empty()) return absl::InvalidArgumentError("address: required");
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("max_message_bytes: must be positive");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs_pem;
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_target_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_target_name);
    }
  }
  auto stubs = std::make_unique<Stubs>();
  stubs->channel = grpc::CreateCustomChannel(address, credentials, args);
  stubs->collections = v1::CollectionService::NewStub(stubs->channel);
  stubs->vectors = v1::VectorService::NewStub(stubs->channel);
  stubs->search = v1::SearchService::NewStub(stubs->channel);
  stubs->admin = v1::AdminService::NewStub(stubs->channel);
  stubs->caches = v1::CacheService::NewStub(stubs->channel);
  stubs->tenants = v1::TenantService::NewStub(stubs->channel);
  stubs->health = grpc::health::v1::Health::NewStub(stubs->channel);
  return std::unique_ptr<Client>(new Client(std::move(stubs), options));
}

absl::StatusOr<bool> Client::IsServing(const std::string& service) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stubs_->health->Check(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

absl::StatusOr<CollectionInfo> Client::CreateCollection(const CollectionSpec& spec) {
  v1::CreateCollectionRequest request;
  rpc::CollectionSpecToProto(spec, request.mutable_spec());
  v1::CreateCollectionResponse response;
  grpc::Status status =
      stubs_->collections->CreateCollection(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return InfoFromProto(response.collection());
}

absl::StatusOr<std::vector<CollectionInfo>> Client::ListCollections() {
  v1::ListCollectionsResponse response;
  grpc::Status status =
      stubs_->collections->ListCollections(NewContext(options_).get(), {}, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<CollectionInfo> out;
  for (const v1::CollectionInfo& info : response.collections()) out.push_back(InfoFromProto(info));
  return out;
}

absl::StatusOr<CollectionInfo> Client::DescribeCollection(const std::string& name) {
  v1::DescribeCollectionRequest request;
  request.set_name(name);
  v1::DescribeCollectionResponse response;
  grpc::Status status =
      stubs_->collections->DescribeCollection(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return InfoFromProto(response.collection());
}

absl::Status Client::DropCollection(const std::string& name) {
  v1::DropCollectionRequest request;
  request.set_name(name);
  v1::DropCollectionResponse response;
  return FromGrpc(
      stubs_->collections->DropCollection(NewContext(options_).get(), request, &response));
}

absl::Status Client::CreateAlias(const std::string& alias, const std::string& collection) {
  v1::CreateAliasRequest request;
  request.set_alias(alias);
  request.set_collection(collection);
  v1::CreateAliasResponse response;
  return FromGrpc(stubs_->collections->CreateAlias(NewContext(options_).get(), request, &response));
}

absl::Status Client::AlterAlias(const std::string& alias, const std::string& collection) {
  v1::AlterAliasRequest request;
  request.set_alias(alias);
  request.set_collection(collection);
  v1::AlterAliasResponse response;
  return FromGrpc(stubs_->collections->AlterAlias(NewContext(options_).get(), request, &response));
}

absl::Status Client::DropAlias(const std::string& alias) {
  v1::DropAliasRequest request;
  request.set_alias(alias);
  v1::DropAliasResponse response;
  return FromGrpc(stubs_->collections->DropAlias(NewContext(options_).get(), request, &response));
}

absl::StatusOr<std::vector<AliasInfo>> Client::ListAliases(const std::string& collection) {
  v1::ListAliasesRequest request;
  request.set_collection(collection);
  v1::ListAliasesResponse response;
  grpc::Status status =
      stubs_->collections->ListAliases(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<AliasInfo> out;
  for (const v1::Alias& alias : response.aliases()) {
    out.push_back({alias.alias(), alias.collection()});
  }
  return out;
}

absl::StatusOr<uint64_t> Client::Upsert(const std::string& collection,
                                        std::span<const Record> records, bool sync) {
  return Upsert(collection, records, WriteOptions{.sync = sync});
}

absl::StatusOr<uint64_t> Client::Upsert(const std::string& collection,
                                        std::span<const Record> records,
                                        const WriteOptions& options) {
  v1::UpsertRequest request;
  request.set_collection(collection);
  request.set_sync(options.sync);
  request.set_tenant(options.tenant);
  AddRecords(records, request);
  v1::UpsertResponse response;
  grpc::Status status = stubs_->vectors->Upsert(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.upserted();
}

absl::StatusOr<std::vector<std::optional<Record>>> Client::Get(const std::string& collection,
                                                               std::span<const Key> keys,
                                                               const ReadOptions& options) {
  v1::GetRequest request;
  request.set_collection(collection);
  request.set_tenant(options.tenant);
  request.mutable_consistency()->set_read_your_writes(options.consistency.read_your_writes);
  request.mutable_consistency()->set_min_applied_sequence(options.consistency.min_applied_sequence);
  for (const Key& key : keys) rpc::KeyToProto(key, request.add_keys());
  v1::GetResponse response;
  grpc::Status status = stubs_->vectors->Get(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<std::optional<Record>> out;
  for (const v1::GetResult& result : response.results()) {
    if (!result.found()) {
      out.emplace_back();
      continue;
    }
    absl::StatusOr<Record> record = rpc::RecordFromProto(result.record(), "record");
    if (!record.ok()) return record.status();
    out.emplace_back(*std::move(record));
  }
  return out;
}

absl::StatusOr<uint64_t> Client::Delete(const std::string& collection, std::span<const Key> keys,
                                        bool sync) {
  return Delete(collection, keys, WriteOptions{.sync = sync});
}

absl::StatusOr<uint64_t> Client::Delete(const std::string& collection, std::span<const Key> keys,
                                        const WriteOptions& options) {
  v1::DeleteRequest request;
  request.set_collection(collection);
  request.set_sync(options.sync);
  request.set_tenant(options.tenant);
  for (const Key& key : keys) rpc::KeyToProto(key, request.add_keys());
  v1::DeleteResponse response;
  grpc::Status status = stubs_->vectors->Delete(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.deleted();
}

absl::StatusOr<std::vector<uint64_t>> Client::Batch(std::span<const WriteOp> ops) {
  v1::BatchRequest request;
  for (const WriteOp& op : ops) {
    v1::BatchOperation* out = request.add_operations();
    if (op.kind == WriteOp::Kind::kUpsert) {
      out->mutable_upsert()->set_collection(op.collection);
      out->mutable_upsert()->set_sync(op.sync);
      out->mutable_upsert()->set_tenant(op.tenant);
      AddRecords(op.records, *out->mutable_upsert());
    } else {
      out->mutable_delete_()->set_collection(op.collection);
      out->mutable_delete_()->set_sync(op.sync);
      out->mutable_delete_()->set_tenant(op.tenant);
      for (const Key& key : op.keys) rpc::KeyToProto(key, out->mutable_delete_()->add_keys());
    }
  }
  v1::BatchResponse response;
  grpc::Status status = stubs_->vectors->Batch(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<uint64_t> out;
  for (const v1::BatchResult& result : response.results()) {
    out.push_back(result.has_upsert() ? result.upsert().upserted() : result.delete_().deleted());
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<Hit>>> Client::Search(const std::string& collection,
                                                             std::span<const float> queries,
                                                             const SearchParams& params) {
  v1::SearchRequest request;
  SearchToProto(collection, queries, params, request);
  v1::SearchResponse response;
  grpc::Status status = stubs_->search->Search(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  return HitsFromProto(response, params.stats);
}

absl::StatusOr<std::vector<std::vector<std::vector<Hit>>>> Client::BatchSearch(
    std::span<const SearchCall> calls) {
  v1::BatchSearchRequest request;
  for (const SearchCall& call : calls) {
    SearchToProto(call.collection, call.queries, call.params, *request.add_searches());
  }
  v1::BatchSearchResponse response;
  grpc::Status status = stubs_->search->BatchSearch(NewContext(options_).get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<std::vector<std::vector<Hit>>> out;
  for (int i = 0; i < response.responses_size(); ++i) {
    SearchStats* stats = i < static_cast<int>(calls.size()) ? calls[i].params.stats : nullptr;
    absl::StatusOr<std::vector<std::vector<Hit>>> hits =
        HitsFromProto(response.responses(i), stats);
    if (!hits.ok()) return hits.status();
    out.push_back(*std::move(hits));
  }
  return out;
}

}  // namespace shoal::client
