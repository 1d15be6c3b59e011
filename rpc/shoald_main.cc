// shoald: Shoal's gRPC server over one data directory.
//
//   shoald --listen 127.0.0.1:50051 --data ./shoal-data [--key-file KEYS] [--metrics-listen
//          127.0.0.1:9464] [--snapshot-dir DIR] [--tls-cert PEM --tls-key PEM]
//
// Prints one line to stdout once serving (tools and tests parse it):
//   shoald listening on HOST:PORT data=DIR
// and, with --metrics-listen, a second one:
//   shoald metrics on HOST:PORT
// SIGTERM / SIGINT: health turns NOT_SERVING, then after --shutdown-drain-ms the server stops
// accepting RPCs, in-flight ones get --shutdown-grace-ms, the DB is closed and the process
// exits 0. Any start-up failure is reported on stderr with exit status 1.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/db_host.h"
#include "rpc/server.h"
#include "shoal/db.h"
#include "shoal/options.h"

namespace {

constexpr char kUsage[] = R"(usage: shoald [flags]
  --listen HOST:PORT         address to serve on (default 127.0.0.1:50051); port 0 picks a
                             free port, printed on the start-up line
  --data DIR                 data directory, created if absent (default ./shoal-data)
  --key-file FILE            API keys, one "ROLE KEY [NAME]" per line (roles: admin,
                             read-write, read-only); clients send "authorization: Bearer KEY".
                             Without it there is no authentication (loopback only)
  --insecure-allow-remote    allow a non-loopback address without --key-file
  --tls-cert FILE            PEM certificate chain; with --tls-key, serve TLS only
  --tls-key FILE             PEM private key
  --max-message-bytes N      largest request or response message (default 67108864)
  --rate-limit-rps N         per-key request rate limit, requests/s (default 0 = off)
  --rate-limit-burst N       per-key burst (default: the rate)
  --ingest-inflight-bytes N  ingest batches applied at once over all streams before clients
                             are told to back off (default 268435456)
  --metrics-listen HOST:PORT serve Prometheus metrics (GET /metrics only) on this address
  --snapshot-dir DIR         where Snapshot writes and Restore reads snapshots (by name)
  --shutdown-drain-ms N      on SIGTERM/SIGINT: report NOT_SERVING for N ms before stopping
                             (default 0)
  --shutdown-grace-ms N      on SIGTERM/SIGINT: let in-flight RPCs (and open streams and
                             client connections) finish for up to N ms (default 5000)
)";

struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string data = "./shoal-data";
  std::string key_file;
  std::string tls_cert;
  std::string tls_key;
  std::string metrics_listen;
  std::string snapshot_dir;
  bool insecure_allow_remote = false;
  int32_t max_message_bytes = 64 << 20;
  int32_t rate_limit_rps = 0;
  int32_t rate_limit_burst = 0;
  int32_t ingest_inflight_bytes = 256 << 20;
  int32_t shutdown_drain_ms = 0;
  int32_t shutdown_grace_ms = 5000;
  bool help = false;
};

// Accepts "--name value" and "--name=value". A plain parser (not absl flags) so that flag
// names keep their dashes and nothing registers process-wide state.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= argc) return absl::InvalidArgumentError(arg + ": missing value");
      return std::string(argv[++i]);
    };
    auto take_int = [&](int32_t* out) -> absl::Status {
      absl::StatusOr<std::string> text = take();
      if (!text.ok()) return text.status();
      if (!absl::SimpleAtoi(*text, out) || *out < 0) {
        return absl::InvalidArgumentError(arg + ": \"" + *text + "\" is not a number >= 0");
      }
      return absl::OkStatus();
    };
    absl::Status status;
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
    } else if (std::string* target = arg == "--listen"           ? &flags.listen
                                     : arg == "--data"           ? &flags.data
                                     : arg == "--key-file"       ? &flags.key_file
                                     : arg == "--tls-cert"       ? &flags.tls_cert
                                     : arg == "--tls-key"        ? &flags.tls_key
                                     : arg == "--metrics-listen" ? &flags.metrics_listen
                                     : arg == "--snapshot-dir"   ? &flags.snapshot_dir
                                                                 : nullptr) {
      absl::StatusOr<std::string> text = take();
      if (!text.ok()) return text.status();
      *target = *text;
    } else if (arg == "--insecure-allow-remote" && !has_value) {
      flags.insecure_allow_remote = true;
    } else if (arg == "--max-message-bytes") {
      status = take_int(&flags.max_message_bytes);
    } else if (arg == "--rate-limit-rps") {
      status = take_int(&flags.rate_limit_rps);
    } else if (arg == "--rate-limit-burst") {
      status = take_int(&flags.rate_limit_burst);
    } else if (arg == "--ingest-inflight-bytes") {
      status = take_int(&flags.ingest_inflight_bytes);
    } else if (arg == "--shutdown-drain-ms") {
      status = take_int(&flags.shutdown_drain_ms);
    } else if (arg == "--shutdown-grace-ms") {
      status = take_int(&flags.shutdown_grace_ms);
    } else {
      return absl::InvalidArgumentError("unknown argument \"" + arg + "\"");
    }
    if (!status.ok()) return status;
  }
  return flags;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::cerr << "shoald: " << what << ": " << status << std::endl;
  return 1;
}

int Run(const Flags& flags) {
  // Block the shutdown signals before any thread exists (RocksDB's, gRPC's), so that every
  // thread inherits the mask and only the sigwait below ever receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string& data = flags.data;
  std::error_code error;
  std::filesystem::create_directories(data, error);
  if (error) {
    return Fail("data", absl::UnavailableError("cannot create " + data + ": " + error.message()));
  }

  shoal::Options db_options;
  db_options.create_if_missing = true;
  absl::StatusOr<std::unique_ptr<shoal::rpc::DbHost>> db =
      shoal::rpc::DbHost::Open(data, db_options);
  if (!db.ok()) return Fail("opening " + data, db.status());

  shoal::rpc::ServerOptions options;
  options.listen_address = flags.listen;
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
  absl::StatusOr<std::unique_ptr<shoal::rpc::Server>> server =
      shoal::rpc::Server::Start(db->get(), options);
  if (!server.ok()) return Fail("starting server", server.status());

  std::cout << "shoald listening on " << (*server)->address() << " data=" << data << std::endl;
  if ((*server)->metrics_port() != 0) {
    const std::string& listen = flags.metrics_listen;
    std::cout << "shoald metrics on " << listen.substr(0, listen.rfind(':')) << ":"
              << (*server)->metrics_port() << std::endl;
  }
  if (!flags.key_file.empty() && flags.tls_cert.empty()) {
    std::cerr << "shoald: warning: API keys without TLS travel in plaintext; use --tls-cert and "
                 "--tls-key off loopback"
              << std::endl;
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "shoald: signal " << signal_number << ", shutting down" << std::endl;
  (*server)->SetNotServing();
  absl::SleepFor(absl::Milliseconds(flags.shutdown_drain_ms));
  (*server)->Shutdown(absl::Milliseconds(flags.shutdown_grace_ms));
  server->reset();
  db->reset();  // closes the directory; every acknowledged write is already durable
  std::cerr << "shoald: stopped" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "shoald: " << flags.status().message() << "\n" << kUsage;
    return 2;
  }
  if (flags->help) {
    std::cout << kUsage;
    return 0;
  }
  return Run(*flags);
}
