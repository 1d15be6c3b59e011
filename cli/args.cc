#include "cli/args.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::cli {

namespace {
// The payload that marks a usage error; its presence is all that matters.
constexpr char kUsagePayload[] = "shoal.cli/usage";
}  // namespace

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return absl::IsInvalidArgument(status) && status.GetPayload(kUsagePayload).has_value();
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
    return UsageError(
        absl::StrCat("--", name, ": \"", it->second, "\" is not a number in 0..", max));
  }
  return value;
}

absl::StatusOr<double> Args::GetDouble(const std::string& name, double fallback) const {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  double value = 0;
  if (!absl::SimpleAtod(it->second, &value)) {
    return UsageError(absl::StrCat("--", name, ": \"", it->second, "\" is not a number"));
  }
  return value;
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
