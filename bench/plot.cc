#include "bench/plot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

extern char** environ;

namespace shoal::bench {
namespace {

// Debian's interpreter: python3-matplotlib is installed for it, not for whatever python3 comes
// first on PATH (pyenv and the like).
constexpr char kPython[] = "/usr/bin/python3";
constexpr char kScript[] = SHOAL_PLOT_SCRIPT;  // bench/plot_recall_qps.py (CMake)

// Runs argv (argv[0] a path), waits; its exit status, or an error when it could not start.
absl::StatusOr<int> Run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int err = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", args[0], ": ", std::strerror(err)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

absl::Status CheckPlotter() {
  if (!std::filesystem::exists(kScript)) {
    return absl::FailedPreconditionError(absl::StrCat("--plot: ", kScript, " is missing"));
  }
  SHOAL_ASSIGN_OR_RETURN(int code, Run({kPython, "-c", "import matplotlib"}));
  if (code != 0) {
    return absl::FailedPreconditionError(
        "--plot needs matplotlib for /usr/bin/python3: apt-get install python3-matplotlib");
  }
  return absl::OkStatus();
}

absl::Status PlotRecallQps(std::span<const ResultRow> rows, const std::string& png_path,
                           const std::string& title) {
  std::string csv_path =
      (std::filesystem::temp_directory_path() / "shoal_bench_plot_XXXXXX.csv").string();
  const int fd = mkstemps(csv_path.data(), 4);
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemps: ", std::strerror(errno)));
  close(fd);
  absl::Status written = [&] {
    CsvWriter csv;  // closed before the script reads the file
    SHOAL_RETURN_IF_ERROR(csv.Open(csv_path));
    for (const ResultRow& row : rows) SHOAL_RETURN_IF_ERROR(csv.Write(row));
    return absl::OkStatus();
  }();
  absl::StatusOr<int> code = written.ok()
                                 ? Run({kPython, kScript, csv_path, png_path, "--title", title})
                                 : absl::StatusOr<int>(written);
  std::filesystem::remove(csv_path);
  SHOAL_RETURN_IF_ERROR(code.status());
  if (*code != 0) {
    return absl::InternalError(absl::StrCat(kScript, " exited ", *code, " (see its output)"));
  }
  return absl::OkStatus();
}

}  // namespace shoal::bench
