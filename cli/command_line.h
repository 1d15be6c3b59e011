// `shoal`'s command lines, parsed with CLI11 from the command table (cli/commands.h): the
// program's arguments (global flags, every command, `ingest`, `offline`, `help`) and the shell's
// lines (the commands, `help`, and --output). Unknown commands and flags, surplus arguments and
// missing flag values are usage errors (cli/args.h: exit status 2) with a hint; `--help` after
// any command prints that command's help, `--version` the build (base/build_info.h).
//
//   SHOAL_ASSIGN_OR_RETURN(CommandLine line, ParseCommandLine(words, LineMode::kProgram));
//   if (line.action == CommandLine::Action::kPrint) { std::cout << line.text; return 0; }
//   RunCommand(connection, line.args);   // line.args.positional[0] is the command
//
// Stateless; thread-safe.
#ifndef SHOAL_CLI_COMMAND_LINE_H_
#define SHOAL_CLI_COMMAND_LINE_H_

#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "cli/args.h"

namespace shoal::cli {

enum class LineMode {
  kProgram,  // argv of `shoal`: global flags, the commands, ingest, offline, help
  kShell,    // one REPL or script line: the commands and help; --output is the only global flag
};

struct CommandLine {
  enum class Action {
    kRun,    // run args (positional[0] the command; empty positional: no command given)
    kPrint,  // print `text` (help or version) and succeed
  };
  Action action = Action::kRun;
  Args args;  // flags by name without "--", global ones included
  std::string text;
};

// UsageError for bad usage; the message names the offending word and how to get help.
absl::StatusOr<CommandLine> ParseCommandLine(std::span<const std::string> words, LineMode mode);

// "shoal 0.1.0 (git 4ff5e40)\n".
std::string VersionLine(const std::string& program);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_COMMAND_LINE_H_
