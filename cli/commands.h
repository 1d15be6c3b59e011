// The `shoal` commands over gRPC: one table of name, usage, help and handler, shared by
// one-shot mode (`shoal describe docs`), the REPL (dispatch, `help`, tab completion) and the
// tests. Each handler makes one or a few RPCs and answers a Table (cli/output.h); errors come
// back as absl::Status with the server's canonical code.
//
//   SHOAL_ASSIGN_OR_RETURN(CommandLine line, ParseCommandLine(words, LineMode::kShell));
//   SHOAL_ASSIGN_OR_RETURN(Table table, RunCommand(*connection, line.args));
//
// Adding an RPC: write its handler in commands*.cc and add one entry to the table in
// commands.cc (the parser, completion and help pick it up). A flag not in the entry is refused.
#ifndef SHOAL_CLI_COMMANDS_H_
#define SHOAL_CLI_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "cli/connection.h"
#include "cli/output.h"

namespace shoal::cli {

using CommandHandler = absl::StatusOr<Table> (*)(const Connection&, const Args&);

inline constexpr size_t kAnyNumber = SIZE_MAX;

struct Command {
  const char* name;
  const char* arguments;  // positional arguments after the name, e.g. "NAME KEY..."
  size_t max_arguments;   // more are refused (kAnyNumber: no limit); the handler checks the least
  std::vector<Flag> flags;
  const char* help;  // one line
  // Whether the first argument is a collection name (the REPL completes it).
  bool takes_collection;
  CommandHandler run;
};

// "create NAME [--dimension D] [--metric l2|ip|cosine]".
std::string Usage(const Command& command);

// Every gRPC command, in the order `help` lists them.
const std::vector<Command>& Commands();
// nullptr when unknown.
const Command* FindCommand(const std::string& name);

// Runs args.positional[0]. InvalidArgument for an unknown command or wrong arguments (the
// message shows the usage).
absl::StatusOr<Table> RunCommand(const Connection& connection, const Args& args);

// Every command's usage and help line, and the shell's own (help, quit), for `help`.
std::string HelpText();

// Collection names, for completion; empty on any error.
std::vector<std::string> CollectionNames(const Connection& connection);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_COMMANDS_H_
