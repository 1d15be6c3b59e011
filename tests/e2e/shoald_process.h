// ShoaldProcess: runs a real `shoald` binary as a child process for end-to-end tests.
//
//   ShoaldProcess shoald;
//   ASSERT_TRUE(shoald.Start(data_dir).ok());          // waits for the "listening on" line
//   auto channel = grpc::CreateChannel(shoald.address(), grpc::InsecureChannelCredentials());
//   ...
//   ASSERT_EQ(shoald.Terminate(), 0);                  // SIGTERM, wait, exit status
//
// The binary is $SHOAL_BIN_DIR/shoald. The destructor SIGKILLs a child that is still running,
// so a failing test never leaks a server. Not thread-safe; one object per child.
#ifndef SHOAL_TESTS_E2E_SHOALD_PROCESS_H_
#define SHOAL_TESTS_E2E_SHOALD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shoal::e2e {

class ShoaldProcess {
 public:
  ShoaldProcess() = default;
  ~ShoaldProcess();
  ShoaldProcess(const ShoaldProcess&) = delete;
  ShoaldProcess& operator=(const ShoaldProcess&) = delete;

  // Starts `shoald --listen 127.0.0.1:0 --data <data_dir> <extra_args...>` and waits up to
  // `timeout` for its start-up line (and, when extra_args has --metrics-listen, the metrics
  // line). Its stderr is kept for assertions (Stderr()).
  // FAILED_PRECONDITION if SHOAL_BIN_DIR is unset; UNAVAILABLE if the child exits or stays
  // silent (the error includes its exit status / stderr).
  absl::Status Start(const std::string& data_dir, const std::vector<std::string>& extra_args = {},
                     absl::Duration timeout = absl::Seconds(60));

  // Starts shoald with exactly `args` (no defaults added) and waits for it to exit; returns
  // its exit status (128 + signal if killed). For testing start-up refusals.
  absl::StatusOr<int> RunToExit(const std::vector<std::string>& args,
                                absl::Duration timeout = absl::Seconds(60));

  // Sends `signal` to the running child.
  void Signal(int signal);
  // Waits up to `timeout` for the child to exit; its exit status (128 + signal if killed), or
  // DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Duration timeout = absl::Seconds(60));
  // Signal(SIGTERM) + Wait(); -1 on timeout (the child is then SIGKILLed).
  int Terminate(absl::Duration timeout = absl::Seconds(60));

  // "127.0.0.1:PORT" and PORT as printed by the child.
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The metrics port from "shoald metrics on HOST:PORT"; 0 without --metrics-listen.
  int metrics_port() const { return metrics_port_; }
  // The child's process id (-1 when none runs).
  pid_t pid() const { return pid_; }
  // Everything the child wrote to stderr so far.
  std::string Stderr() const;

 private:
  absl::Status Spawn(const std::vector<std::string>& args);
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  void KillAndReap();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string stderr_path_;
  std::string address_;
  int port_ = 0;
  int metrics_port_ = 0;
};

// A fresh empty directory under the test temp dir; removed by the caller.
std::string MakeTempDir();

}  // namespace shoal::e2e

#endif  // SHOAL_TESTS_E2E_SHOALD_PROCESS_H_
