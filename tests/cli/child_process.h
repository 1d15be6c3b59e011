// Running the `shoal` binary from tests: to completion with captured output, in the background
// (to kill it midway), or on a pseudo-terminal (to drive the REPL like a person would).
//
//   RunResult r = RunShoal({"--server", addr, "describe", "docs"});
//   EXPECT_EQ(r.exit_status, 0) << r.err;
//
//   PtyChild shell;
//   ASSERT_TRUE(shell.Start({"--server", addr}, {"SHOAL_HISTORY=/tmp/h"}).ok());
//   ASSERT_TRUE(shell.ReadUntil("shoal> ").ok());
//   shell.Write("help\n");
//
// The binaries are $SHOAL_BIN_DIR/shoal and $SHOAL_BIN_DIR/shoald. Destructors SIGKILL children
// still running. Not thread-safe.
#ifndef SHOAL_TESTS_CLI_CHILD_PROCESS_H_
#define SHOAL_TESTS_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shoal::cli_test {

std::string ShoalBinary();
std::string ShoaldBinary();

struct RunResult {
  int exit_status = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs shoal with `args` (and extra "NAME=VALUE" environment entries), stdin from /dev/null.
RunResult RunShoal(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                   absl::Duration timeout = absl::Seconds(120));
// The same for any program (e.g. ShoaldBinary()).
RunResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {},
                     absl::Duration timeout = absl::Seconds(120));

// A child whose stdout/stderr go to files; for killing it midway.
class BackgroundChild {
 public:
  ~BackgroundChild();
  absl::Status Start(const std::vector<std::string>& args, const std::string& output_path);
  void Kill(int signal);
  // Exit status (128 + signal when killed), or DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  pid_t pid_ = -1;
};

// A child on a pseudo-terminal (forkpty): stdin, stdout and stderr are the terminal.
class PtyChild {
 public:
  ~PtyChild();
  absl::Status Start(const std::vector<std::string>& args, const std::vector<std::string>& env);
  void Write(const std::string& text);
  // Reads until the output since the last ReadUntil contains `marker`; returns that output.
  // DEADLINE_EXCEEDED (with what was read) on timeout.
  absl::StatusOr<std::string> ReadUntil(const std::string& marker,
                                        absl::Duration timeout = absl::Seconds(30));
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  std::string pending_;
};

}  // namespace shoal::cli_test

#endif  // SHOAL_TESTS_CLI_CHILD_PROCESS_H_
