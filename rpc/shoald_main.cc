// shoald: Shoal's gRPC server over one data directory.
//
//   shoald --listen 127.0.0.1:50051 [--listen unix:/PATH] --data ./shoal-data [--key-file KEYS]
//          [--metrics-listen
//          127.0.0.1:9464] [--console-listen 127.0.0.1:8080] [--snapshot-dir DIR]
//          [--tls-cert PEM --tls-key PEM]
//          [--cluster-etcd http://HOST:PORT --cluster-nats nats://HOST:PORT --node-id ID
//           [--advertise HOST:PORT]]
//
// With the cluster flags the node joins a cluster (cluster/cluster_node.h; DESIGN.md §10):
// collections created with shards > 0 are spread over the nodes, any node serves any call.
// Nodes call each other with the API key in $SHOAL_CLUSTER_API_KEY (needed when the nodes
// have a --key-file; a read-write key suffices).
// Without them shoald is the single-node server it always was.
//
// Prints one line to stdout once serving (tools and tests parse it):
//   shoald listening on HOST:PORT data=DIR
// and, with --metrics-listen, a second one:
//   shoald metrics on HOST:PORT
// and, with --console-listen, one more:
//   shoald console on http://HOST:PORT/
// and one per --listen after the first:
//   shoald also listening on ADDRESS
// SIGTERM / SIGINT: health turns NOT_SERVING, then after --shutdown-drain-ms the server stops
// accepting RPCs, in-flight ones get --shutdown-grace-ms, the DB is closed and the process
// exits 0. Any start-up failure is reported on stderr with exit status 1; bad usage (an unknown
// flag, a malformed value) with exit status 2. --help lists the flags, --version the build.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/build_info.h"
#include "cluster/cluster_db.h"
#include "cluster/cluster_node.h"
#include "rpc/cluster_metrics.h"
#include "rpc/cluster_status.h"
#include "rpc/db_host.h"
#include "rpc/server.h"
#include "shoal/db.h"
#include "shoal/options.h"
#include "shoal/power_cut.h"

namespace {

struct Flags {
  std::vector<std::string> listen = {"127.0.0.1:50051"};
  std::string data = "./shoal-data";
  std::string key_file;
  std::string tls_cert;
  std::string tls_key;
  std::string metrics_listen;
  std::string snapshot_dir;
  std::string console_listen;
  bool insecure_allow_remote = false;
  int32_t max_message_bytes = 64 << 20;
  int32_t rate_limit_rps = 0;
  int32_t rate_limit_burst = 0;
  int32_t ingest_inflight_bytes = 256 << 20;
  int32_t shutdown_drain_ms = 0;
  int32_t shutdown_grace_ms = 5000;
  bool testing_power_loss = false;
  std::string cluster_etcd;
  std::string cluster_nats;
  std::string node_id;
  std::string advertise;
};

// The outcome of parsing argv: run with `flags`, or print `text` and exit with `exit_status`
// (--help, --version: 0 on stdout; bad usage: 2 on stderr).
struct Parsed {
  Flags flags;
  bool run = true;
  int exit_status = 0;
  std::string text;
};

// CLI11 reports --help, --version and errors by throwing; they are caught here and nowhere else.
Parsed ParseFlags(int argc, char** argv) {
  Parsed parsed;
  Flags& f = parsed.flags;
  CLI::App app{"shoald: Shoal's gRPC server over one data directory", "shoald"};
  app.set_version_flag("--version", "shoald " + shoal::base::VersionText(),
                       "print the version and exit");
  app.add_option("--listen", f.listen,
                 "address to serve on (default 127.0.0.1:50051); port 0 picks a free port, "
                 "printed on the start-up line; unix:/PATH serves a Unix-domain socket (local "
                 "clients); repeat to serve several, e.g. a TCP port and a socket")
      ->type_name("HOST:PORT|unix:PATH")
      ->allow_extra_args(false);
  app.add_option("--data", f.data, "data directory, created if absent (default ./shoal-data)")
      ->type_name("DIR");
  app.add_option("--key-file", f.key_file,
                 "API keys, one \"ROLE KEY [NAME] [tenant=T]\" per line (roles: admin, "
                 "read-write, read-only; tenant=T binds a non-admin key to tenant T); clients "
                 "send \"authorization: Bearer KEY\". Without it there is no authentication "
                 "(loopback only)")
      ->type_name("FILE");
  app.add_flag("--insecure-allow-remote", f.insecure_allow_remote,
               "allow a non-loopback address without --key-file");
  app.add_option("--tls-cert", f.tls_cert, "PEM certificate chain; with --tls-key, serve TLS only")
      ->type_name("FILE");
  app.add_option("--tls-key", f.tls_key, "PEM private key")->type_name("FILE");
  auto number = [&](const char* name, int32_t* value, const char* help) {
    app.add_option(name, *value, help)->type_name("N")->check(CLI::NonNegativeNumber);
  };
  number("--max-message-bytes", &f.max_message_bytes,
         "largest request or response message (default 67108864)");
  number("--rate-limit-rps", &f.rate_limit_rps,
         "per-key request rate limit, requests/s (default 0 = off)");
  number("--rate-limit-burst", &f.rate_limit_burst, "per-key burst (default: the rate)");
  number("--ingest-inflight-bytes", &f.ingest_inflight_bytes,
         "ingest batches applied at once over all streams before clients are told to back off "
         "(default 268435456)");
  app.add_option("--metrics-listen", f.metrics_listen,
                 "serve Prometheus metrics (GET /metrics only) on this address")
      ->type_name("HOST:PORT");
  app.add_option("--console-listen", f.console_listen,
                 "serve the web console (a page and its JSON API, with the same API keys and "
                 "roles as gRPC) on this address; off by default")
      ->type_name("HOST:PORT");
  app.add_option("--snapshot-dir", f.snapshot_dir,
                 "where Snapshot writes and Restore reads snapshots (by name)")
      ->type_name("DIR");
  number("--shutdown-drain-ms", &f.shutdown_drain_ms,
         "on SIGTERM/SIGINT: report NOT_SERVING for N ms before stopping (default 0)");
  number("--shutdown-grace-ms", &f.shutdown_grace_ms,
         "on SIGTERM/SIGINT: let in-flight RPCs (and open streams and client connections) "
         "finish for up to N ms (default 5000)");
  // For crash tests only (scripts/soak --power-loss); hidden from --help.
  app.add_flag("--testing-power-loss-on-sigusr1", f.testing_power_loss,
               "open the data directory through the fault-injecting file system; SIGUSR1 then "
               "drops every write not yet synced and exits with status 137, as a power cut would")
      ->group("");
  app.add_option(
         "--cluster-etcd", f.cluster_etcd,
         "cluster mode: etcd endpoint (its v3 JSON gateway) for membership, the coordinator "
         "election and shard maps; needs --cluster-nats and --node-id")
      ->type_name("URL");
  app.add_option("--cluster-nats", f.cluster_nats,
                 "cluster mode: NATS server with JetStream, holding each shard's write-ahead log")
      ->type_name("URL");
  app.add_option("--node-id", f.node_id, "cluster mode: this node's id, [A-Za-z0-9_-]{1,64}")
      ->type_name("ID");
  app.add_option("--advertise", f.advertise,
                 "cluster mode: the address other nodes reach this node at (default: the address "
                 "it listens on)")
      ->type_name("HOST:PORT");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    parsed = {.run = false, .exit_status = 0, .text = app.help()};
  } catch (const CLI::CallForVersion& version) {
    parsed = {.run = false, .exit_status = 0, .text = std::string(version.what()) + "\n"};
  } catch (const CLI::ParseError& error) {
    parsed = {.run = false,
              .exit_status = 2,
              .text = std::string("shoald: ") + error.what() +
                      "\nusage: shoald [FLAGS]; shoald --help lists them\n"};
  }
  return parsed;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::cerr << "shoald: " << what << ": " << status << std::endl;
  return 1;
}

// --testing-power-loss-on-sigusr1: the files go back to what a power loss would leave (every
// write not yet synced dropped) and the process exits without closing anything.
[[noreturn]] void CutPowerAndExit(shoal::PowerCut* power) {
  const absl::Status cut = power->Cut();
  if (!cut.ok()) std::cerr << "shoald: power cut: " << cut << std::endl;
  std::_Exit(137);
}

std::string PeerApiKey() {
  const char* key = std::getenv("SHOAL_CLUSTER_API_KEY");
  return key == nullptr ? "" : key;
}

// What shoald serves: the DB host, and in cluster mode the node and the ClusterDB it lends.
struct Served {
  std::unique_ptr<shoal::cluster::ClusterNode> cluster_node;
  std::unique_ptr<shoal::DB> cluster_db;
  std::unique_ptr<shoal::rpc::DbHost> host;
};

// `opener`: DB::Open, or --testing-power-loss-on-sigusr1's PowerCut::Open (single node only).
absl::StatusOr<Served> OpenServed(const Flags& flags, shoal::rpc::DbHost::Opener opener) {
  shoal::Options db_options;
  db_options.create_if_missing = true;
  Served served;
  const bool cluster_mode =
      !flags.cluster_etcd.empty() || !flags.cluster_nats.empty() || !flags.node_id.empty();
  if (!cluster_mode) {
    absl::StatusOr<std::unique_ptr<shoal::rpc::DbHost>> host =
        shoal::rpc::DbHost::Open(flags.data, db_options, std::move(opener));
    if (!host.ok()) return host.status();
    served.host = *std::move(host);
    return served;
  }
  absl::StatusOr<std::unique_ptr<shoal::DB>> local = shoal::DB::Open(flags.data, db_options);
  if (!local.ok()) return local.status();
  absl::StatusOr<std::unique_ptr<shoal::cluster::ClusterNode>> node =
      shoal::cluster::ClusterNode::Create(local->get(), {.etcd_url = flags.cluster_etcd,
                                                         .nats_url = flags.cluster_nats,
                                                         .node_id = flags.node_id,
                                                         .state_dir = flags.data + "/cluster",
                                                         .api_key = PeerApiKey()});
  if (!node.ok()) return node.status();
  served.cluster_node = *std::move(node);
  served.cluster_db =
      std::make_unique<shoal::cluster::ClusterDB>(*std::move(local), served.cluster_node.get());
  served.host = std::make_unique<shoal::rpc::DbHost>(served.cluster_db.get());
  return served;
}

int Run(const Flags& flags) {
  // Block the shutdown signals before any thread exists (RocksDB's, gRPC's), so that every
  // thread inherits the mask and only the sigwait below ever receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (flags.testing_power_loss) sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string& data = flags.data;
  std::error_code error;
  std::filesystem::create_directories(data, error);
  if (error) {
    return Fail("data", absl::UnavailableError("cannot create " + data + ": " + error.message()));
  }

  // Lives until _exit: the DB's threads may still call into it when the power goes.
  // Lives until _exit: the DB's threads may still call into it when the power goes.
  static shoal::PowerCut* const power = flags.testing_power_loss ? new shoal::PowerCut() : nullptr;
  shoal::rpc::DbHost::Opener opener = &shoal::DB::Open;
  if (power != nullptr) {
    opener = [](const std::string& path, const shoal::Options& options) {
      return power->Open(path, options);
    };
  }
  absl::StatusOr<Served> served = OpenServed(flags, std::move(opener));
  if (!served.ok()) return Fail("opening " + data, served.status());
  std::unique_ptr<shoal::cluster::ClusterNode>& cluster_node = served->cluster_node;
  std::unique_ptr<shoal::DB>& cluster_db = served->cluster_db;
  std::unique_ptr<shoal::rpc::DbHost>* db = &served->host;

  shoal::rpc::ServerOptions options;
  options.listen_address = flags.listen.front();
  options.more_listen_addresses.assign(flags.listen.begin() + 1, flags.listen.end());
  options.allow_remote = flags.insecure_allow_remote;
  options.key_file = flags.key_file;
  options.tls_cert_file = flags.tls_cert;
  options.tls_key_file = flags.tls_key;
  options.max_message_bytes = flags.max_message_bytes;
  options.rate_limit_rps = flags.rate_limit_rps;
  options.rate_limit_burst = flags.rate_limit_burst;
  options.ingest_inflight_bytes = static_cast<uint64_t>(flags.ingest_inflight_bytes);
  options.metrics_listen = flags.metrics_listen;
  options.snapshot_dir = flags.snapshot_dir;
  options.console_listen = flags.console_listen;
  if (cluster_node != nullptr) {
    options.cluster_status = [node = cluster_node.get()](shoal::v1::GetClusterResponse* out) {
      shoal::rpc::FillClusterStatus(*node, out);
    };
    options.cluster_move = [node = cluster_node.get()](const std::string& collection,
                                                       uint32_t shard, const std::string& from,
                                                       const std::string& to) {
      return node->MoveShard(collection, shard, from, to);
    };
    options.extra_metrics.push_back(shoal::rpc::MakeClusterCollector(cluster_node.get()));
  }
  absl::StatusOr<std::unique_ptr<shoal::rpc::Server>> server =
      shoal::rpc::Server::Start(db->get(), options);
  if (!server.ok()) return Fail("starting server", server.status());

  if (cluster_node != nullptr) {
    const std::string advertise = flags.advertise.empty() ? (*server)->address() : flags.advertise;
    if (absl::Status s = cluster_node->Start(advertise); !s.ok()) return Fail("cluster", s);
    std::cerr << "shoald: cluster node " << flags.node_id << " at " << advertise << std::endl;
  }
  std::cout << "shoald listening on " << (*server)->address() << " data=" << data << std::endl;
  if ((*server)->metrics_port() != 0) {
    const std::string& listen = flags.metrics_listen;
    std::cout << "shoald metrics on " << listen.substr(0, listen.rfind(':')) << ":"
              << (*server)->metrics_port() << std::endl;
  }
  if ((*server)->console_port() != 0) {
    const std::string& listen = flags.console_listen;
    std::cout << "shoald console on http://" << listen.substr(0, listen.rfind(':')) << ":"
              << (*server)->console_port() << "/" << std::endl;
  }
  for (size_t i = 1; i < (*server)->addresses().size(); ++i) {
    std::cout << "shoald also listening on " << (*server)->addresses()[i] << std::endl;
  }
  if (!flags.key_file.empty() && flags.tls_cert.empty()) {
    std::cerr << "shoald: warning: API keys without TLS travel in plaintext; use --tls-cert and "
                 "--tls-key off loopback"
              << std::endl;
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  if (signal_number == SIGUSR1) CutPowerAndExit(power);
  std::cerr << "shoald: signal " << signal_number << ", shutting down" << std::endl;
  (*server)->SetNotServing();
  absl::SleepFor(absl::Milliseconds(flags.shutdown_drain_ms));
  (*server)->Shutdown(absl::Milliseconds(flags.shutdown_grace_ms));
  server->reset();
  if (cluster_node != nullptr) cluster_node->Stop();  // leaves the cluster at once
  // Closes the directory (through cluster_db in cluster mode); every acknowledged write is
  // already durable.
  db->reset();
  cluster_db.reset();
  cluster_node.reset();
  std::cerr << "shoald: stopped" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Parsed parsed = ParseFlags(argc, argv);
  if (!parsed.run) {
    (parsed.exit_status == 0 ? std::cout : std::cerr) << parsed.text;
    return parsed.exit_status;
  }
  return Run(parsed.flags);
}
