// shoald: Shoal's gRPC server over one data directory.
//
//   shoald --listen 127.0.0.1:50051 --data ./shoal-data
//
// Prints exactly one line to stdout once serving (tools and tests parse it):
//   shoald listening on HOST:PORT data=DIR
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
#include "rpc/server.h"
#include "shoal/db.h"
#include "shoal/options.h"

namespace {

constexpr char kUsage[] = R"(usage: shoald [flags]
  --listen HOST:PORT         address to serve on (default 127.0.0.1:50051); port 0 picks a
                             free port, printed on the start-up line
  --data DIR                 data directory, created if absent (default ./shoal-data)
  --insecure-allow-remote    allow a non-loopback address although there is no auth yet
  --max-message-bytes N      largest request or response message (default 67108864)
  --shutdown-drain-ms N      on SIGTERM/SIGINT: report NOT_SERVING for N ms before stopping
                             (default 0)
  --shutdown-grace-ms N      on SIGTERM/SIGINT: let in-flight RPCs (and open streams and
                             client connections) finish for up to N ms (default 5000)
)";

struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string data = "./shoal-data";
  bool insecure_allow_remote = false;
  int32_t max_message_bytes = 64 << 20;
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
    } else if (arg == "--listen" || arg == "--data") {
      absl::StatusOr<std::string> text = take();
      if (!text.ok()) return text.status();
      (arg == "--listen" ? flags.listen : flags.data) = *text;
    } else if (arg == "--insecure-allow-remote" && !has_value) {
      flags.insecure_allow_remote = true;
    } else if (arg == "--max-message-bytes") {
      status = take_int(&flags.max_message_bytes);
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
  absl::StatusOr<std::unique_ptr<shoal::DB>> db = shoal::DB::Open(data, db_options);
  if (!db.ok()) return Fail("opening " + data, db.status());

  shoal::rpc::ServerOptions options;
  options.listen_address = flags.listen;
  options.allow_remote = flags.insecure_allow_remote;
  options.max_message_bytes = flags.max_message_bytes;
  absl::StatusOr<std::unique_ptr<shoal::rpc::Server>> server =
      shoal::rpc::Server::Start(db->get(), options);
  if (!server.ok()) return Fail("starting server", server.status());

  std::cout << "shoald listening on " << (*server)->address() << " data=" << data << std::endl;

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
