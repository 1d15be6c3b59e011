// ClusterServices: the engines a cluster-mode test runs beside its shoald nodes — one etcd and
// one nats-server (JetStream on), each a child process on free loopback ports with its data in
// a temporary directory. Found on PATH or in /usr/bin, /usr/sbin (Debian's etcd-server and
// nats-server packages, installed by scripts/common.sh); Missing() says which is absent so a
// test can skip with a clear message.
//
//   ClusterServices services;
//   if (!services.Missing().empty()) GTEST_SKIP() << services.Missing();
//   ASSERT_TRUE(services.Start(dir).ok());
//   ... shoald --cluster-etcd services.etcd_url() --cluster-nats services.nats_url() ...
//   services.nats().Signal(SIGSTOP);
//
// The destructor SIGKILLs whatever still runs. Not thread-safe.
#ifndef SHOAL_TESTS_E2E_CLUSTER_SERVICES_H_
#define SHOAL_TESTS_E2E_CLUSTER_SERVICES_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shoal::e2e {

// A child process started from a fixed argv; restartable with the same argv.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `argv` (argv[0] a path) with stdout and stderr appended to `log_path`.
  absl::Status Start(std::vector<std::string> argv, std::string log_path);
  absl::Status Restart();  // the same argv again (after Kill)
  void Signal(int signal);
  void Kill();  // SIGKILL and reap
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  std::vector<std::string> argv_;
  std::string log_path_;
  pid_t pid_ = -1;
};

class ClusterServices {
 public:
  // "" when etcd and nats-server are both installed; otherwise which is missing.
  std::string Missing() const;
  // Starts both under `dir` and waits until they answer (UNAVAILABLE after 30 s, with the end of
  // the silent service's log).
  absl::Status Start(const std::string& dir);
  // Waits until etcd / NATS answer again (after a Restart or SIGCONT).
  absl::Status WaitForEtcd(absl::Duration timeout = absl::Seconds(30));
  absl::Status WaitForNats(absl::Duration timeout = absl::Seconds(30));

  ChildProcess& etcd() { return etcd_; }
  ChildProcess& nats() { return nats_; }
  pid_t nats_pid() const { return nats_.pid(); }
  const std::string& etcd_url() const { return etcd_url_; }
  const std::string& nats_url() const { return nats_url_; }

 private:
  ChildProcess etcd_;
  ChildProcess nats_;
  std::string etcd_url_;
  std::string nats_url_;
  int nats_port_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();
// The first executable named `name` on PATH, /usr/bin or /usr/sbin; "" when none.
std::string FindProgram(const std::string& name);

}  // namespace shoal::e2e

#endif  // SHOAL_TESTS_E2E_CLUSTER_SERVICES_H_
