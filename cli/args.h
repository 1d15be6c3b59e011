// A parsed command line as the command handlers read it (positional arguments and flags by
// name; cli/command_line.h parses words into one), the flag declarations the command table
// uses, usage errors, and REPL line splitting.
//
//   args.positional[0] == "describe"; args.Get("output", "table");
//
// Plain data, no global state; thread-compatible.
#ifndef SHOAL_CLI_ARGS_H_
#define SHOAL_CLI_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shoal::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;  // name without "--" -> value ("" for switches)

  bool Has(const std::string& name) const { return flags.contains(name); }
  std::string Get(const std::string& name, const std::string& fallback) const;
  // A usage error (UsageError) naming the flag when the value is not a number >= 0 (or
  // exceeds max).
  absl::StatusOr<uint64_t> GetUint(const std::string& name, uint64_t fallback,
                                   uint64_t max = UINT64_MAX) const;
  absl::StatusOr<double> GetDouble(const std::string& name, double fallback) const;
};

// One flag a command accepts: "--name VALUE", or a switch ("--name") when `value` is null.
struct Flag {
  const char* name;   // without "--"
  const char* value;  // what the value is, for the help, e.g. "K" or "l2|ip|cosine"
  const char* help;   // one line
};

// Bad usage (unknown command or flag, wrong arguments, a malformed flag value): an
// InvalidArgument that `shoal` reports with exit status 2 instead of 1.
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// Splits a REPL line into words: whitespace separates, '...' and "..." quote, backslash escapes.
// InvalidArgument for an unterminated quote.
absl::StatusOr<std::vector<std::string>> SplitLine(std::string_view line);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_ARGS_H_
