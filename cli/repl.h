// The interactive admin shell: `shoal` with no command on a terminal. GNU readline gives line
// editing, history (kept in $SHOAL_HISTORY, default ~/.shoal_history) and tab completion of
// command names and, after a command that takes one, collection names (asked from the server
// when Tab is pressed).
//
//   shoal> describe do<Tab>     ->  describe docs
//
// Each line is parsed like a one-shot command line (quotes allowed); errors are printed as
// "error: CODE: message" and the shell goes on. `help`, `help CMD`, `quit` / `exit` / Ctrl-D.
// Not thread-safe (readline is global state); one Repl per process.
#ifndef SHOAL_CLI_REPL_H_
#define SHOAL_CLI_REPL_H_

#include "cli/connection.h"
#include "cli/output.h"

namespace shoal::cli {

// Runs until end of input or `quit`; returns the process exit status (0).
int RunRepl(const Connection& connection, OutputFormat format);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_REPL_H_
