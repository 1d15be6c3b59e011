#include "tests/e2e/shoald_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace shoal::e2e {
namespace {

int ExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

}  // namespace

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/shoal-e2e-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

ShoaldProcess::~ShoaldProcess() {
  KillAndReap();
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
}

absl::Status ShoaldProcess::Spawn(const std::vector<std::string>& args) {
  const char* bin_dir = std::getenv("SHOAL_BIN_DIR");
  if (bin_dir == nullptr) {
    return absl::FailedPreconditionError("SHOAL_BIN_DIR is not set (run the test through ctest)");
  }
  const std::string binary = absl::StrCat(bin_dir, "/shoald");
  if (stderr_path_.empty()) {
    std::string path = "/tmp/shoald-stderr-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0) return absl::InternalError("mkstemp failed");
    close(fd);
    stderr_path_ = path;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    pid_ = -1;
    return absl::InternalError(absl::StrCat("posix_spawn ", binary, ": errno ", rc));
  }
  stdout_fd_ = pipe_fds[0];
  return absl::OkStatus();
}

absl::StatusOr<std::string> ShoaldProcess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("no start-up line");
    pollfd pfd{stdout_fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char c;
    const ssize_t n = read(stdout_fd_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("stdout closed before the start-up line");
    if (c == '\n') return line;
    line.push_back(c);
  }
}

absl::Status ShoaldProcess::Start(const std::string& data_dir,
                                  const std::vector<std::string>& extra_args,
                                  absl::Duration timeout) {
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--data", data_dir};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (absl::Status s = Spawn(args); !s.ok()) return s;
  absl::StatusOr<std::string> line = ReadLine(timeout);
  if (!line.ok()) {
    KillAndReap();
    return absl::UnavailableError(
        absl::StrCat(line.status().message(), "; shoald stderr:\n", Stderr()));
  }
  // "shoald listening on 127.0.0.1:PORT data=DIR"
  const std::string prefix = "shoald listening on ";
  const size_t space = line->find(' ', prefix.size());
  const size_t colon = line->rfind(':', space);
  if (line->rfind(prefix, 0) != 0 || space == std::string::npos || colon == std::string::npos ||
      !absl::SimpleAtoi(line->substr(colon + 1, space - colon - 1), &port_) ||
      line->substr(space) != " data=" + data_dir) {
    KillAndReap();
    return absl::UnavailableError(absl::StrCat("unexpected start-up line: \"", *line, "\""));
  }
  address_ = line->substr(prefix.size(), space - prefix.size());
  metrics_port_ = 0;
  if (std::find(extra_args.begin(), extra_args.end(), "--metrics-listen") != extra_args.end()) {
    // "shoald metrics on 127.0.0.1:PORT"
    absl::StatusOr<std::string> metrics = ReadLine(timeout);
    const size_t port_colon = metrics.ok() ? metrics->rfind(':') : std::string::npos;
    if (!metrics.ok() || metrics->rfind("shoald metrics on ", 0) != 0 ||
        port_colon == std::string::npos ||
        !absl::SimpleAtoi(metrics->substr(port_colon + 1), &metrics_port_)) {
      KillAndReap();
      return absl::UnavailableError("no metrics line from shoald");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ShoaldProcess::RunToExit(const std::vector<std::string>& args,
                                             absl::Duration timeout) {
  if (absl::Status s = Spawn(args); !s.ok()) return s;
  absl::StatusOr<int> status = Wait(timeout);
  if (!status.ok()) KillAndReap();
  return status;
}

void ShoaldProcess::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

absl::StatusOr<int> ShoaldProcess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("no child");
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int wait_status = 0;
    const pid_t done = waitpid(pid_, &wait_status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      if (stdout_fd_ >= 0) close(stdout_fd_);
      stdout_fd_ = -1;
      return ExitStatus(wait_status);
    }
    if (absl::Now() > deadline) return absl::DeadlineExceededError("shoald did not exit");
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int ShoaldProcess::Terminate(absl::Duration timeout) {
  Signal(SIGTERM);
  absl::StatusOr<int> status = Wait(timeout);
  if (!status.ok()) {
    KillAndReap();
    return -1;
  }
  return *status;
}

void ShoaldProcess::KillAndReap() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int wait_status = 0;
    waitpid(pid_, &wait_status, 0);
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
}

std::string ShoaldProcess::Stderr() const {
  std::ifstream in(stderr_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace shoal::e2e
