// The `shoal` commands over gRPC: one table of name, usage, help and handler, shared by
// one-shot mode (`shoal describe docs`), the REPL (dispatch, `help`, tab completion) and the
// tests. Each handler makes one or a few RPCs and answers a Table (cli/output.h); errors come
// back as absl::Status with the server's canonical code.
//
//   SHOAL_ASSIGN_OR_RETURN(Args args, ParseArgs(words));       // words[0] = command
//   SHOAL_ASSIGN_OR_RETURN(Table table, RunCommand(*connection, args));
//
// Adding an RPC: write its handler in commands*.cc and add one entry to the table in
// commands.cc (completion and help pick it up).
#ifndef SHOAL_CLI_COMMANDS_H_
#define SHOAL_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "cli/connection.h"
#include "cli/output.h"

namespace shoal::cli {

using CommandHandler = absl::StatusOr<Table> (*)(const Connection&, const Args&);

struct Command {
  const char* name;
  const char* usage;  // arguments after the name, e.g. "NAME --dimension D [--metric l2|ip|cosine]"
  const char* help;   // one line
  // Whether the first argument is a collection name (the REPL completes it).
  bool takes_collection;
  CommandHandler run;
};

// Every gRPC command, in the order `help` lists them.
const std::vector<Command>& Commands();
// nullptr when unknown.
const Command* FindCommand(const std::string& name);

// Runs args.positional[0]. InvalidArgument for an unknown command or wrong arguments (the
// message shows the usage).
absl::StatusOr<Table> RunCommand(const Connection& connection, const Args& args);

// The text of `help` (all commands) or `help NAME`.
std::string HelpText(const std::string& command = "");

// Collection names, for completion; empty on any error.
std::vector<std::string> CollectionNames(const Connection& connection);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_COMMANDS_H_
