// Command-line words -> positional arguments and flags, shared by one-shot mode, the REPL and
// `shoal ingest`.
//
//   SHOAL_ASSIGN_OR_RETURN(shoal::cli::Args args, shoal::cli::ParseArgs({"describe", "docs"}));
//   args.positional[0] == "describe"; args.Get("output", "table");
//
// Flags are "--name value" or "--name=value"; the names in kSwitches take no value. Plain data,
// no global state; thread-compatible.
#ifndef SHOAL_CLI_ARGS_H_
#define SHOAL_CLI_ARGS_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;  // name without "--" -> value ("" for switches)

  bool Has(const std::string& name) const { return flags.contains(name); }
  std::string Get(const std::string& name, const std::string& fallback) const;
  // InvalidArgument naming the flag when the value is not a number >= 0 (or exceeds max).
  absl::StatusOr<uint64_t> GetUint(const std::string& name, uint64_t fallback,
                                   uint64_t max = UINT64_MAX) const;
  absl::StatusOr<double> GetDouble(const std::string& name, double fallback) const;
};

// Flags that take no value.
bool IsSwitch(std::string_view name);

// InvalidArgument for a flag with a missing value.
absl::StatusOr<Args> ParseArgs(std::span<const std::string> words);

// Splits a REPL line into words: whitespace separates, '...' and "..." quote, backslash escapes.
// InvalidArgument for an unterminated quote.
absl::StatusOr<std::vector<std::string>> SplitLine(std::string_view line);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_ARGS_H_
