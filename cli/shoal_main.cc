// shoal: Shoal's admin shell and tools.
//
//   shoal [GLOBAL FLAGS]                       interactive shell (stdin a terminal), else runs
//                                              the commands read from stdin, one per line
//   shoal [GLOBAL FLAGS] COMMAND ARGS...       one command (`shoal help` lists them)
//   shoal [GLOBAL FLAGS] ingest FILE --collection NAME ...     load a vector file (cli/ingest.h)
//   shoal offline --data DIR dump|verify|salvage-wal   a data directory, no server (cli/offline.h)
//
// Exit status: 0 success, 1 an error ("error: CODE: message" on stderr), 2 bad usage (an
// unknown command or flag, a surplus argument, a malformed flag value). `--help` after a command
// prints its help; `--version` the build. The command line is parsed by cli/command_line.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/connection.h"
#include "cli/ingest.h"
#include "cli/offline.h"
#include "cli/output.h"
#include "cli/repl.h"

namespace shoal::cli {
namespace {

int Fail(const absl::Status& status) {
  std::cerr << "error: " << ErrorText(status) << "\n";
  return IsUsageError(status) ? 2 : 1;
}

absl::StatusOr<ConnectionOptions> ConnectionFlags(const Args& args) {
  ConnectionOptions options;
  const char* server = std::getenv("SHOAL_SERVER");
  options.server = args.Get("server", server != nullptr ? server : options.server);
  if (const char* key = std::getenv("SHOAL_API_KEY"); key != nullptr) options.api_key = key;
  options.tls = args.Has("tls");
  options.tls_ca = args.Get("tls-ca", "");
  options.tls_cert = args.Get("tls-cert", "");
  options.tls_key = args.Get("tls-key", "");
  options.tls_server_name = args.Get("tls-server-name", "");
  absl::StatusOr<uint64_t> timeout = args.GetUint("timeout-ms", 30000, 86400000);
  if (!timeout.ok()) return timeout.status();
  options.timeout = std::chrono::milliseconds(*timeout);
  return options;
}

// Commands read from a pipe or file: each line runs as a one-shot command; stops at the first
// error.
int RunScript(const Connection& connection, OutputFormat format) {
  std::string line;
  while (std::getline(std::cin, line)) {
    absl::StatusOr<std::vector<std::string>> words = SplitLine(line);
    if (!words.ok()) return Fail(words.status());
    if (words->empty() || (*words)[0].starts_with("#")) continue;
    absl::StatusOr<CommandLine> parsed = ParseCommandLine(*words, LineMode::kShell);
    if (!parsed.ok()) return Fail(parsed.status());
    if (parsed->action == CommandLine::Action::kPrint) {
      std::cout << parsed->text << std::flush;
      continue;
    }
    absl::StatusOr<OutputFormat> line_format =
        parsed->args.Has("output") ? ParseOutputFormat(parsed->args.Get("output", "")) : format;
    if (!line_format.ok()) return Fail(line_format.status());
    absl::StatusOr<Table> table = RunCommand(connection, parsed->args);
    if (!table.ok()) return Fail(table.status());
    std::cout << Render(*table, *line_format) << std::flush;
  }
  return 0;
}

int Main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(words, LineMode::kProgram);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->action == CommandLine::Action::kPrint) {
    std::cout << parsed->text;
    return 0;
  }
  const Args& args = parsed->args;
  const std::string command = args.positional.empty() ? "" : args.positional[0];
  if (command == "offline") return RunOffline(args);

  absl::StatusOr<OutputFormat> format =
      ParseOutputFormat(args.Get("output", isatty(STDOUT_FILENO) ? "table" : "json"));
  if (!format.ok()) return Fail(format.status());
  absl::StatusOr<ConnectionOptions> options = ConnectionFlags(args);
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<std::unique_ptr<Connection>> connection = Connection::Create(*options);
  if (!connection.ok()) return Fail(connection.status());

  if (command.empty()) {
    if (isatty(STDIN_FILENO)) return RunRepl(**connection, *format);
    return RunScript(**connection, *format);
  }
  if (command == "ingest") return RunIngest(**connection, args);
  absl::StatusOr<Table> table = RunCommand(**connection, args);
  if (!table.ok()) return Fail(table.status());
  std::cout << Render(*table, *format);
  return 0;
}

}  // namespace
}  // namespace shoal::cli

int main(int argc, char** argv) { return shoal::cli::Main(argc, argv); }
