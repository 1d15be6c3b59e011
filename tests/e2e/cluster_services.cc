#include "tests/e2e/cluster_services.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"

extern char** environ;

namespace shoal::e2e {

ChildProcess::~ChildProcess() { Kill(); }

absl::Status ChildProcess::Start(std::vector<std::string> argv, std::string log_path) {
  argv_ = std::move(argv);
  log_path_ = std::move(log_path);
  return Restart();
}

absl::Status ChildProcess::Restart() {
  Kill();
  std::vector<char*> args;
  for (std::string& arg : argv_) args.push_back(arg.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const int rc = posix_spawn(&pid_, argv_[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return absl::InternalError(absl::StrCat("posix_spawn ", argv_[0], ": errno ", rc));
  }
  return absl::OkStatus();
}

void ChildProcess::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a stopped child must run to die
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

std::string FindProgram(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = absl::StrSplit(path, ':');
  dirs.push_back("/usr/bin");
  dirs.push_back("/usr/sbin");
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string ClusterServices::Missing() const {
  std::string missing;
  if (FindProgram("etcd").empty()) missing += "etcd (Debian etcd-server) is not installed; ";
  if (FindProgram("nats-server").empty()) missing += "nats-server is not installed; ";
  if (!missing.empty()) missing += "scripts/common.sh installs both";
  return missing;
}

namespace {

// The last `bytes` of the file at `path` ("" when it cannot be read): a service's own account of
// why it did not come up.
std::string Tail(const std::string& path, size_t bytes = 2048) {
  std::ifstream in(path, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace

absl::Status ClusterServices::Start(const std::string& dir) {
  // Three ports free a moment ago and distinct from each other (two picks in a row may return
  // the same one).
  const int client_port = FreeLoopbackPort();
  int peer_port = FreeLoopbackPort();
  while (peer_port == client_port) peer_port = FreeLoopbackPort();
  nats_port_ = FreeLoopbackPort();
  while (nats_port_ == client_port || nats_port_ == peer_port) nats_port_ = FreeLoopbackPort();
  etcd_url_ = absl::StrCat("http://127.0.0.1:", client_port);
  nats_url_ = absl::StrCat("nats://127.0.0.1:", nats_port_);
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port);
  std::filesystem::create_directories(dir + "/etcd");
  std::filesystem::create_directories(dir + "/nats");
  absl::Status s = etcd_.Start(
      {FindProgram("etcd"), "--name", "e2e", "--data-dir", dir + "/etcd", "--listen-client-urls",
       etcd_url_, "--advertise-client-urls", etcd_url_, "--listen-peer-urls", peer_url,
       "--initial-advertise-peer-urls", peer_url, "--initial-cluster", "e2e=" + peer_url},
      dir + "/etcd.log");
  if (!s.ok()) return s;
  s = nats_.Start({FindProgram("nats-server"), "-js", "-a", "127.0.0.1", "-p",
                   absl::StrCat(nats_port_), "-sd", dir + "/nats"},
                  dir + "/nats.log");
  if (!s.ok()) return s;
  if (s = WaitForEtcd(); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat(s.message(), "; etcd.log ends:\n", Tail(dir + "/etcd.log")));
  }
  if (s = WaitForNats(); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat(s.message(), "; nats.log ends:\n", Tail(dir + "/nats.log")));
  }
  return absl::OkStatus();
}

absl::Status ClusterServices::WaitForEtcd(absl::Duration timeout) {
  cluster::EtcdClient etcd(etcd_url_, absl::Seconds(1));
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (absl::Now() < deadline) {
    last = etcd.RangePrefix("/").status();
    if (last.ok()) return last;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError(absl::StrCat("etcd did not answer: ", last.ToString()));
}

absl::Status ClusterServices::WaitForNats(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(nats_port_));
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (up) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError("nats-server did not listen");
}

}  // namespace shoal::e2e
