#include "cli/args.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::cli {

bool IsSwitch(std::string_view name) {
  static const std::set<std::string_view> kSwitches = {"sync",    "create",      "help", "tls",
                                                       "restart", "no-progress", "exact"};
  return kSwitches.contains(name);
}

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

absl::StatusOr<uint64_t> Args::GetUint(const std::string& name, uint64_t fallback,
                                       uint64_t max) const {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  uint64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", it->second, "\" is not a number in 0..", max));
  }
  return value;
}

absl::StatusOr<double> Args::GetDouble(const std::string& name, double fallback) const {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  double value = 0;
  if (!absl::SimpleAtod(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", it->second, "\" is not a number"));
  }
  return value;
}

absl::StatusOr<Args> ParseArgs(std::span<const std::string> words) {
  Args args;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() < 3 || word.rfind("--", 0) != 0) {
      args.positional.push_back(word);
      continue;
    }
    std::string name = word.substr(2);
    if (size_t eq = name.find('='); eq != std::string::npos) {
      args.flags[name.substr(0, eq)] = name.substr(eq + 1);
    } else if (IsSwitch(name)) {
      args.flags[name] = "";
    } else if (i + 1 < words.size()) {
      args.flags[name] = words[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(word, ": missing value"));
    }
  }
  return args;
}

absl::StatusOr<std::vector<std::string>> SplitLine(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        word.push_back(line[++i]);
      } else {
        word.push_back(c);
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word.push_back(line[++i]);
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (quote != 0) return absl::InvalidArgumentError("unterminated quote");
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace shoal::cli
