#include "tests/cli/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace shoal::cli_test {
namespace {

int ExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

std::vector<char*> Argv(const std::vector<std::string>& args, const std::string& binary) {
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

absl::StatusOr<int> WaitFor(pid_t* pid, absl::Duration timeout) {
  if (*pid <= 0) return absl::FailedPreconditionError("no child");
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      *pid = -1;
      return ExitStatus(status);
    }
    if (absl::Now() > deadline) return absl::DeadlineExceededError("child did not exit");
    absl::SleepFor(absl::Milliseconds(10));
  }
}

void KillAndReap(pid_t* pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGKILL);
  int status = 0;
  waitpid(*pid, &status, 0);
  *pid = -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string ShoalBinary() {
  const char* dir = std::getenv("SHOAL_BIN_DIR");
  return absl::StrCat(dir != nullptr ? dir : ".", "/shoal");
}

std::string ShoaldBinary() {
  const char* dir = std::getenv("SHOAL_BIN_DIR");
  return absl::StrCat(dir != nullptr ? dir : ".", "/shoald");
}

RunResult RunShoal(const std::vector<std::string>& args, const std::vector<std::string>& env,
                   absl::Duration timeout) {
  return RunProgram(ShoalBinary(), args, env, timeout);
}

RunResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, absl::Duration timeout) {
  RunResult result;
  char out_path[] = "/tmp/shoal-out-XXXXXX";
  char err_path[] = "/tmp/shoal-err-XXXXXX";
  close(mkstemp(out_path));
  close(mkstemp(err_path));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path, O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path, O_WRONLY | O_TRUNC, 0);
  std::vector<char*> argv = Argv(args, binary);
  std::vector<std::string> env_strings = Environment(env);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data()) == 0) {
    absl::StatusOr<int> status = WaitFor(&pid, timeout);
    if (!status.ok()) KillAndReap(&pid);
    result.exit_status = status.ok() ? *status : -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  unlink(out_path);
  unlink(err_path);
  return result;
}

BackgroundChild::~BackgroundChild() { KillAndReap(&pid_); }

absl::Status BackgroundChild::Start(const std::vector<std::string>& args,
                                    const std::string& output_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const std::string binary = ShoalBinary();
  std::vector<char*> argv = Argv(args, binary);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return absl::InternalError(absl::StrCat("posix_spawn: ", rc));
  return absl::OkStatus();
}

void BackgroundChild::Kill(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

absl::StatusOr<int> BackgroundChild::Wait(absl::Duration timeout) {
  return WaitFor(&pid_, timeout);
}

PtyChild::~PtyChild() {
  KillAndReap(&pid_);
  if (master_ >= 0) close(master_);
}

absl::Status PtyChild::Start(const std::vector<std::string>& args,
                             const std::vector<std::string>& env) {
  const std::string binary = ShoalBinary();
  std::vector<char*> argv = Argv(args, binary);
  std::vector<std::string> env_strings = Environment(env);
  env_strings.push_back("TERM=dumb");
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  struct winsize size = {24, 200, 0, 0};
  pid_ = forkpty(&master_, nullptr, nullptr, &size);
  if (pid_ < 0) return absl::InternalError(absl::StrCat("forkpty: errno ", errno));
  if (pid_ == 0) {
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return absl::OkStatus();
}

void PtyChild::Write(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(master_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

absl::StatusOr<std::string> PtyChild::ReadUntil(const std::string& marker, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (pending_.find(marker) == std::string::npos) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("no \"", marker, "\" in: ", pending_));
    }
    pollfd pfd{master_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(master_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(absl::StrCat("terminal closed; read: ", pending_));
    }
    pending_.append(buffer, static_cast<size_t>(n));
  }
  const size_t end = pending_.find(marker) + marker.size();
  std::string out = pending_.substr(0, end);
  pending_.erase(0, end);
  return out;
}

absl::StatusOr<int> PtyChild::Wait(absl::Duration timeout) { return WaitFor(&pid_, timeout); }

}  // namespace shoal::cli_test
