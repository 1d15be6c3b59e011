// Output of the `shoal` commands: every command answers a Table, printed as an aligned text
// table (for people), JSON (for scripts; the default when stdout is not a terminal) or CSV.
//
//   Table t{.columns = {"name", "vectors"}};
//   t.rows.push_back({Cell::Text("docs"), Cell::Number(uint64_t{42})});
//   std::cout << Render(t, OutputFormat::kJson);   // [{"name":"docs","vectors":42}]
//
// JSON: an array of objects, one per row; with `single` set, the one row's object alone.
// CSV: RFC 4180 (a header line, fields quoted when they hold , " or a line break).
// Plain data; thread-compatible.
#ifndef SHOAL_CLI_OUTPUT_H_
#define SHOAL_CLI_OUTPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal::cli {

enum class OutputFormat { kTable, kJson, kCsv };

// "table", "json" or "csv"; InvalidArgument naming --output otherwise.
absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name);

struct Cell {
  enum class Kind { kText, kNumber, kBool, kNull };
  Kind kind = Kind::kNull;
  std::string text;  // the value as printed (numbers already formatted)

  static Cell Text(std::string text) { return {Kind::kText, std::move(text)}; }
  static Cell Number(uint64_t value) { return {Kind::kNumber, std::to_string(value)}; }
  static Cell Number(int64_t value) { return {Kind::kNumber, std::to_string(value)}; }
  static Cell Number(double value);
  static Cell Bool(bool value) { return {Kind::kBool, value ? "true" : "false"}; }
  static Cell Null() { return {Kind::kNull, ""}; }
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;  // each as wide as `columns`
  bool single = false;                  // one object, not a list (describe, stats)
};

// A table with no columns renders as nothing (commands that only succeed).
std::string Render(const Table& table, OutputFormat format);

// JSON string literal of `text` (quotes included), escaping as RFC 8259 requires.
std::string JsonQuote(std::string_view text);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_OUTPUT_H_
