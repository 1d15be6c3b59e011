// EtcdClient: the few etcd v3 calls cluster mode needs, over etcd's JSON gateway (HTTP POST to
// /v3/kv/range, /v3/kv/put, /v3/kv/txn, /v3/kv/deleterange, /v3/lease/grant,
// /v3/lease/keepalive, /v3/lease/revoke, /v3/watch; keys and values base64 in the JSON).
// etcd does the consensus; this file only speaks to it.
//
//   EtcdClient etcd("http://127.0.0.1:2379");
//   SHOAL_ASSIGN_OR_RETURN(int64_t lease, etcd.GrantLease(absl::Seconds(5)));
//   SHOAL_ASSIGN_OR_RETURN(bool won, etcd.CreateIfAbsent("/shoal/coordinator", "n1", lease));
//
// Errors: UNAVAILABLE when etcd cannot be reached or answers with an HTTP error (the message
// names the endpoint and what curl or etcd said); NOT_FOUND from KeepAlive when the lease has
// expired; DATA_LOSS for an answer that is not the JSON etcd sends.
//
// Thread safety: every method may be called from any thread; each call uses its own HTTP
// handle. Watch blocks its caller until `stop` returns true or the stream breaks.
#ifndef SHOAL_CLUSTER_ETCD_CLIENT_H_
#define SHOAL_CLUSTER_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shoal::cluster {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// What a range read saw, and the store's revision when it read it.
struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
};

class EtcdClient {
 public:
  // `endpoint`: "http://HOST:PORT" of one etcd member. Each call fails after `timeout`.
  explicit EtcdClient(std::string endpoint, absl::Duration timeout = absl::Seconds(3));

  const std::string& endpoint() const { return endpoint_; }

  // Every key starting with `prefix`, sorted by key.
  absl::StatusOr<RangeResult> RangePrefix(const std::string& prefix);
  // The key, or an empty result when it does not exist.
  absl::StatusOr<RangeResult> Get(const std::string& key);
  // lease 0 = no lease.
  absl::Status Put(const std::string& key, const std::string& value, int64_t lease = 0);
  absl::Status Delete(const std::string& key);
  // Deletes every key starting with `prefix`.
  absl::Status DeletePrefix(const std::string& prefix);
  // Writes the key only if it does not exist (txn: create_revision == 0). True when written.
  absl::StatusOr<bool> CreateIfAbsent(const std::string& key, const std::string& value,
                                      int64_t lease);
  // Writes the key only if its mod_revision is still `mod_revision` (0: only if absent).
  absl::StatusOr<bool> CompareAndPut(const std::string& key, const std::string& value,
                                     int64_t mod_revision);

  // A lease of `ttl`; returns its id.
  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl);
  // Refreshes the lease; NOT_FOUND once it has expired (its keys are gone).
  absl::Status KeepAlive(int64_t lease);
  absl::Status RevokeLease(int64_t lease);

  // Streams changes of keys under `prefix` from `start_revision`: calls `on_change` once per
  // batch of events (it re-reads what it needs). Returns when `stop()` is true (checked at
  // least once a second) with OK, or with UNAVAILABLE when the stream breaks.
  absl::Status Watch(const std::string& prefix, int64_t start_revision,
                     const std::function<void()>& on_change, const std::function<bool()>& stop);

 private:
  // POSTs `body` to `path` and returns the answer's body.
  absl::StatusOr<std::string> Post(const std::string& path, const std::string& body);

  const std::string endpoint_;
  const absl::Duration timeout_;
};

// The exclusive end of the key range of every key that starts with `prefix` (etcd's range_end).
std::string PrefixEnd(const std::string& prefix);

}  // namespace shoal::cluster

#endif  // SHOAL_CLUSTER_ETCD_CLIENT_H_
