#include "cli/repl.h"

// readline's headers need stdio first.
// clang-format off
#include <cstdio>
#include <readline/history.h>
#include <readline/readline.h>
// clang-format on

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/command_line.h"
#include "cli/commands.h"

namespace shoal::cli {
namespace {

// readline calls plain C functions; they reach the shell's state through these.
const Connection* g_connection = nullptr;
std::vector<std::string> g_candidates;
size_t g_next_candidate = 0;

char* NextCandidate(const char* text, int state) {
  if (state == 0) g_next_candidate = 0;
  const size_t length = std::strlen(text);
  while (g_next_candidate < g_candidates.size()) {
    const std::string& candidate = g_candidates[g_next_candidate++];
    if (candidate.compare(0, length, text) == 0) return strdup(candidate.c_str());
  }
  return nullptr;
}

// Completes the command (first word) or a collection name (second word of a command that
// takes one); nothing for the other words (no file-name completion either).
char** Complete(const char* text, int start, int /*end*/) {
  rl_attempted_completion_over = 1;
  std::string before(rl_line_buffer, start);
  absl::StatusOr<std::vector<std::string>> words = SplitLine(before);
  g_candidates.clear();
  if (!words.ok()) return nullptr;
  if (words->empty()) {
    for (const Command& command : Commands()) g_candidates.push_back(command.name);
    for (const char* extra : {"help", "quit", "exit"}) g_candidates.push_back(extra);
  } else if (words->size() == 1) {
    const Command* command = FindCommand((*words)[0]);
    if (command != nullptr && command->takes_collection && g_connection != nullptr) {
      g_candidates = CollectionNames(*g_connection);
    } else if ((*words)[0] == "help") {
      for (const Command& c : Commands()) g_candidates.push_back(c.name);
    }
  }
  return rl_completion_matches(text, NextCandidate);
}

std::string HistoryPath() {
  if (const char* path = std::getenv("SHOAL_HISTORY"); path != nullptr) return path;
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    return absl::StrCat(home, "/.shoal_history");
  }
  return "";
}

// Runs one line; false when the shell should end.
bool RunLine(const Connection& connection, OutputFormat format, const std::string& line) {
  absl::StatusOr<std::vector<std::string>> words = SplitLine(line);
  if (!words.ok()) {
    std::cerr << "error: " << ErrorText(words.status()) << "\n";
    return true;
  }
  if (words->empty()) return true;
  const std::string& name = (*words)[0];
  if (name == "quit" || name == "exit") return false;
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(*words, LineMode::kShell);
  if (parsed.ok() && parsed->action == CommandLine::Action::kPrint) {
    std::cout << parsed->text << std::flush;
    return true;
  }
  absl::StatusOr<OutputFormat> line_format = format;
  if (parsed.ok() && parsed->args.Has("output")) {
    line_format = ParseOutputFormat(parsed->args.Get("output", ""));
  }
  absl::StatusOr<Table> table = !parsed.ok()        ? parsed.status()
                                : !line_format.ok() ? line_format.status()
                                                    : RunCommand(connection, parsed->args);
  if (!table.ok()) {
    std::cerr << "error: " << ErrorText(table.status()) << "\n";
    return true;
  }
  std::cout << Render(*table, *line_format) << std::flush;
  return true;
}

}  // namespace

int RunRepl(const Connection& connection, OutputFormat format) {
  g_connection = &connection;
  rl_readline_name = "shoal";
  rl_attempted_completion_function = Complete;
  const std::string history = HistoryPath();
  // append_history needs an existing file; write_history creates it.
  if (!history.empty() && read_history(history.c_str()) != 0) write_history(history.c_str());
  std::cout << "shoal shell on " << connection.server()
            << " (help: commands, Tab: complete, Ctrl-D: quit)\n";
  while (true) {
    char* raw = readline("shoal> ");
    if (raw == nullptr) break;  // Ctrl-D
    std::string line = raw;
    std::free(raw);
    if (line.find_first_not_of(" \t") != std::string::npos) {
      add_history(line.c_str());
      if (!history.empty()) append_history(1, history.c_str());
    }
    if (!RunLine(connection, format, line)) break;
  }
  if (!history.empty()) history_truncate_file(history.c_str(), 1000);
  g_connection = nullptr;
  return 0;
}

}  // namespace shoal::cli
