// Shoal's C++ client SDK: every shoal.v1 RPC of a running shoald as a method returning
// absl::Status / absl::StatusOr, with the embedded API's value types (shoal/types.h,
// shoal/filter.h) in and out: vectors are std::vector<float> / std::span<const float>, never
// protobuf messages.
//
//   shoal::client::ConnectOptions options;
//   options.api_key = std::getenv("SHOAL_API_KEY");
//   SHOAL_ASSIGN_OR_RETURN(auto client, shoal::client::Client::Connect("127.0.0.1:50051",
//   options)); client->CreateCollection({.name = "docs", .dimension = 768, .metric =
//   shoal::Metric::kCosine}); client->Upsert("docs", records); SHOAL_ASSIGN_OR_RETURN(auto hits,
//   client->Search("docs", query, {.k = 10}));
//
// Tenants: WriteOptions::tenant, ReadOptions::tenant and SearchParams::tenant travel in the
// request (UpsertRequest.tenant, ...). With an API key bound to a tenant the server pins every
// call to that tenant: leave them empty (or name that tenant); naming another is
// PERMISSION_DENIED. Only admin keys may name any tenant.
//
// Errors: the server's gRPC status as an absl::Status with the same canonical code and message
// (e.g. NOT_FOUND "collection: 'x' not found", UNAUTHENTICATED, PERMISSION_DENIED,
// RESOURCE_EXHAUSTED), or UNAVAILABLE / DEADLINE_EXCEEDED from the transport.
//
// Thread safety: a Client may be used from any number of threads at once (one channel, one
// HTTP/2 connection). Each call gets ConnectOptions::timeout as its deadline.
#ifndef SHOAL_RPC_CLIENT_SHOAL_CLIENT_H_
#define SHOAL_RPC_CLIENT_SHOAL_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/cache.h"
#include "shoal/filter.h"
#include "shoal/options.h"
#include "shoal/tenants.h"
#include "shoal/types.h"

namespace shoal::client {

struct ConnectOptions {
  // Sent as "authorization: Bearer KEY" on every call; empty = none.
  std::string api_key;
  // TLS: on when `tls` is set; roots = this PEM (e.g. a self-signed server certificate) or,
  // empty, the system's roots. `tls_target_name` overrides the name checked in the
  // certificate (e.g. "localhost" when connecting to 127.0.0.1).
  bool tls = false;
  std::string tls_root_certs_pem;
  std::string tls_target_name;
  // Deadline of every call (a BuildIndex stream: of the whole build).
  absl::Duration timeout = absl::Seconds(60);
  // Largest message sent or received.
  int max_message_bytes = 64 << 20;
};

// One write of a Batch call.
struct WriteOp {
  enum class Kind { kUpsert, kDelete };
  Kind kind = Kind::kUpsert;
  std::string collection;
  std::vector<Record> records;  // kUpsert
  std::vector<Key> keys;        // kDelete
  bool sync = false;
  std::string tenant;  // as WriteOptions::tenant; "" = none (or the key's, for a bound key)
};

// One search of a BatchSearch call (params.stats and params.filter are read, not owned).
struct SearchCall {
  std::string collection;
  std::vector<float> queries;  // n * dimension floats
  SearchParams params;
};

struct IngestOptions {
  size_t batch_records = 1000;  // records per streamed batch
  size_t max_in_flight = 4;     // batches sent but not yet acknowledged
  bool sync = false;
  std::string tenant;  // the tenant that owns the records (as WriteOptions::tenant)
};

struct IngestResult {
  uint64_t upserted = 0;
  uint64_t batches = 0;
  uint64_t retries = 0;  // batches resent because the server asked to back off
};

struct BuildProgress {
  std::string phase;  // "building" or "done"
  double fraction = 0;
  double elapsed_seconds = 0;
  uint64_t vectors = 0;
  std::string step;  // while building: "reading", "clustering", ... (shoal::IndexBuildProgress)
};

struct SnapshotInfo {
  std::string name;
  uint64_t bytes = 0;
  uint64_t files = 0;
  int64_t created_unix_seconds = 0;
};

struct ServerStats {
  std::vector<CollectionInfo> collections;
  uint64_t total_vectors = 0;
  uint64_t total_vector_bytes = 0;
  double uptime_seconds = 0;
  uint32_t builds_in_progress = 0;
  uint64_t ingest_inflight_bytes = 0;
  uint64_t ingest_inflight_budget_bytes = 0;
  std::string version;
};

class SearchSession;

class Client {
 public:
  // Creates the channel (connecting lazily, on the first call). INVALID_ARGUMENT for an empty
  // address or bad options.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& address,
                                                         const ConnectOptions& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // ---- Health (grpc.health.v1; "" = the whole server) ----
  absl::StatusOr<bool> IsServing(const std::string& service = "");

  // ---- Collections and aliases ----
  absl::StatusOr<CollectionInfo> CreateCollection(const CollectionSpec& spec);
  absl::StatusOr<std::vector<CollectionInfo>> ListCollections();
  absl::StatusOr<CollectionInfo> DescribeCollection(const std::string& name);
  absl::Status DropCollection(const std::string& name);
  absl::Status CreateAlias(const std::string& alias, const std::string& collection);
  absl::Status AlterAlias(const std::string& alias, const std::string& collection);
  absl::Status DropAlias(const std::string& alias);
  // All aliases, or those of `collection`.
  absl::StatusOr<std::vector<AliasInfo>> ListAliases(const std::string& collection = "");

  // ---- Records ----
  // Returns the number of records written.
  absl::StatusOr<uint64_t> Upsert(const std::string& collection, std::span<const Record> records,
                                  bool sync = false);
  absl::StatusOr<uint64_t> Upsert(const std::string& collection, std::span<const Record> records,
                                  const WriteOptions& options);
  absl::StatusOr<std::vector<std::optional<Record>>> Get(const std::string& collection,
                                                         std::span<const Key> keys,
                                                         const ReadOptions& options = {});
  // Returns how many of the keys existed.
  absl::StatusOr<uint64_t> Delete(const std::string& collection, std::span<const Key> keys,
                                  bool sync = false);
  absl::StatusOr<uint64_t> Delete(const std::string& collection, std::span<const Key> keys,
                                  const WriteOptions& options);
  // Records by filter (VectorService Count / Scroll / DeleteByFilter; shoal/db.h). `filter`
  // is not owned; nullptr = every record. Count and Scroll need a read-only key,
  // DeleteByFilter a read-write one (nullptr deletes every record: the wire's `all`).
  absl::StatusOr<uint64_t> Count(const std::string& collection, const Filter* filter = nullptr,
                                 const ReadOptions& options = {});
  absl::StatusOr<ScrollPage> Scroll(const std::string& collection, const Filter* filter = nullptr,
                                    const ScrollOptions& scroll = {},
                                    const ReadOptions& options = {});
  absl::StatusOr<uint64_t> DeleteByFilter(const std::string& collection, const Filter* filter,
                                          const WriteOptions& options = {});
  // Applies `ops` in order in one round trip; per op the records upserted or keys deleted.
  absl::StatusOr<std::vector<uint64_t>> Batch(std::span<const WriteOp> ops);
  // Streams `records` in batches over one Ingest stream, keeping up to max_in_flight batches
  // unacknowledged and resending those the server asks to back off. A result only when every
  // batch was acknowledged: a stream that ends before (even with OK) is UNAVAILABLE saying how
  // many were; an answer out of order is INTERNAL.
  absl::StatusOr<IngestResult> Ingest(const std::string& collection,
                                      std::span<const Record> records,
                                      const IngestOptions& options = {});

  // ---- Search ----
  // `queries` holds n * dimension floats; n lists of hits. params.stats, when set, is filled.
  absl::StatusOr<std::vector<std::vector<Hit>>> Search(const std::string& collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params = {});
  // One result (n lists of hits) per call, in order.
  absl::StatusOr<std::vector<std::vector<std::vector<Hit>>>> BatchSearch(
      std::span<const SearchCall> calls);
  // A session that sends its searches over one SearchStream (below): for a thread that sends
  // many small searches. The stream opens on the session's first search.
  std::unique_ptr<SearchSession> NewSearchSession();

  // ---- Tenants (shoal/tenants.h; TenantService) ----
  // `tenant` "" = the API key's own tenant (a tenant-bound key); other keys must name one
  // (INVALID_ARGUMENT otherwise). Create, drop, quotas and state need an admin key; Grant,
  // Revoke and DeleteByTenant a read-write key; the rest a read-only key. A tenant-bound key
  // may describe, count and delete-by its own tenant only, and ListTenants shows it that
  // tenant alone.
  absl::StatusOr<TenantInfo> CreateTenant(const std::string& collection, const TenantSpec& spec);
  // Returns how many records the tenant owned (deleted for every tenant).
  absl::StatusOr<uint64_t> DropTenant(const std::string& collection, const std::string& tenant,
                                      bool sync = false);
  // page_size 0 = the server's default (100); at most 10000.
  absl::StatusOr<TenantPage> ListTenants(const std::string& collection, uint32_t page_size = 0,
                                         const std::string& page_token = "");
  absl::StatusOr<TenantInfo> DescribeTenant(const std::string& collection,
                                            const std::string& tenant = "");
  absl::Status SetTenantQuotas(const std::string& collection, const std::string& tenant,
                               const TenantQuotas& quotas);
  absl::Status SetTenantState(const std::string& collection, const std::string& tenant,
                              TenantState state);
  // Makes the records of `keys` visible to (Grant) or hides them from (Revoke) `tenant`, all
  // or nothing, without copying them.
  absl::Status Grant(const std::string& collection, const std::string& tenant,
                     std::span<const Key> keys, bool sync = false);
  absl::Status Revoke(const std::string& collection, const std::string& tenant,
                      std::span<const Key> keys, bool sync = false);
  // The tenants that see `key`: its owner first, then the grantees by name.
  absl::StatusOr<std::vector<std::string>> ListKeyTenants(const std::string& collection,
                                                          const Key& key);
  // The same with the owner apart ("" when the record has none; from a server that does not
  // tell, always "").
  absl::StatusOr<KeyTenants> DescribeKeyTenants(const std::string& collection, const Key& key);
  // Records `tenant` owns (`owned_only`) or sees.
  absl::StatusOr<uint64_t> CountByTenant(const std::string& collection,
                                         const std::string& tenant = "", bool owned_only = false);
  // Deletes every record `tenant` owns (for every tenant); returns how many.
  absl::StatusOr<uint64_t> DeleteByTenant(const std::string& collection,
                                          const std::string& tenant = "", bool sync = false);

  // ---- Admin (admin key) ----
  // Blocks until the build is done; `on_progress` (optional) sees every progress report.
  absl::StatusOr<CollectionInfo> BuildIndex(
      const std::string& collection, const std::string& spec,
      const std::function<void(const BuildProgress&)>& on_progress = nullptr,
      uint32_t progress_interval_ms = 0);
  // Returns the seconds it took. Empty collection = the whole database.
  absl::StatusOr<double> Compact(const std::string& collection = "");
  // Empty name = the server picks one.
  absl::StatusOr<SnapshotInfo> Snapshot(const std::string& name = "");
  absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots();
  // The collections of the restored database.
  absl::StatusOr<std::vector<CollectionInfo>> Restore(const std::string& name);
  absl::StatusOr<ServerStats> GetStats();
  // Cluster mode: moves one replica of `collection`'s `shard` from node `from` to node `to`
  // (AdminService.MoveShard); returns the shard map's version with the move in it. The move
  // completes in the background (the target catches up first).
  absl::StatusOr<int64_t> MoveShard(const std::string& collection, uint32_t shard,
                                    const std::string& from, const std::string& to);

  // ---- Semantic caches (shoal/cache.h; CacheService) ----
  // As the embedded DB's "Semantic caches" calls (include/shoal/db.h), over the wire.
  absl::Status CreateCache(const CacheSpec& spec);
  absl::Status DropCache(const std::string& cache);
  absl::StatusOr<std::vector<CacheInfo>> ListCaches();
  absl::Status SetCachePolicy(const std::string& cache, const std::string& category,
                              const CachePolicy& policy);
  absl::StatusOr<CachePolicy> GetCachePolicy(const std::string& cache, const std::string& category);
  absl::StatusOr<CacheLookupResult> CacheLookup(const std::string& cache,
                                                const CacheLookupRequest& request);
  // The new entry's id (0: the category is disabled).
  absl::StatusOr<uint64_t> CacheStore(const std::string& cache, const CacheStoreRequest& request,
                                      bool sync = false);
  absl::StatusOr<uint64_t> CacheInvalidate(const std::string& cache,
                                           const CacheInvalidation& which);
  absl::Status CacheFeedback(const std::string& cache, const CacheFeedbackReport& report);
  absl::StatusOr<CacheStats> GetCacheStats(const std::string& cache);
  absl::Status ReportModelLoad(const std::string& model, double load);

 private:
  struct Stubs;
  Client(std::unique_ptr<Stubs> stubs, ConnectOptions options);

  std::unique_ptr<Stubs> stubs_;
  const ConnectOptions options_;
};

// Searches sent one after another over one SearchService.SearchStream, so that each costs a
// message each way instead of a call's setup: for a thread that sends many searches of one or
// a few queries.
//
//   std::unique_ptr<shoal::client::SearchSession> session = client->NewSearchSession();
//   for (...) SHOAL_ASSIGN_OR_RETURN(auto hits, session->Search("docs", query, {.k = 10}));
//
// Each Search answers as Client::Search would: the same hits, the same errors with the same
// codes and messages (a bad request fails only itself; the stream goes on), the API key and
// tenant rules of the Client's options, ConnectOptions::timeout as the deadline of each search.
// A search past its deadline returns DEADLINE_EXCEEDED and a cancelled one CANCELLED; either
// ends the stream, and the next search opens a new one. A stream that broke after answering
// (the server restarted, the connection dropped) is reopened once and the search sent again
// (searches do not change data); when that fails too, the search returns the transport's
// status (UNAVAILABLE, "search stream: ..."). Closing the session ends the stream.
//
// Thread safety: one thread at a time may call Search (keep a session per thread); Cancel may
// be called from any thread. The session shares the Client's channel and may outlive it.
class SearchSession {
 public:
  ~SearchSession();
  SearchSession(const SearchSession&) = delete;
  SearchSession& operator=(const SearchSession&) = delete;

  absl::StatusOr<std::vector<std::vector<Hit>>> Search(const std::string& collection,
                                                       std::span<const float> queries,
                                                       const SearchParams& params = {});
  // Ends the stream now: a search in flight returns CANCELLED; the next search opens a new
  // stream. Thread-safe.
  void Cancel();

 private:
  friend class Client;
  struct Shared;
  class Stream;
  explicit SearchSession(std::unique_ptr<Shared> shared);

  // The stream to send on (opening one when none is open or the last was cancelled).
  Stream* CurrentStream();
  // Closes and forgets the current stream; `cancel`: without waiting for the server.
  void DropStream(bool cancel);

  std::unique_ptr<Shared> shared_;
};

}  // namespace shoal::client

#endif  // SHOAL_RPC_CLIENT_SHOAL_CLIENT_H_
