// Output of the `shoal` commands: every command answers a Table, printed as an aligned text
// table (for people), JSON (for scripts; the default when stdout is not a terminal) or CSV.
//
//   Table t{.columns = {"name", "vectors", "bytes"}};
//   t.rows.push_back({Cell::Text("docs"), Cell::Number(uint64_t{42}), Cell::Bytes(195648000)});
//   std::cout << Render(t, OutputFormat::kJson);  //
//   [{"name":"docs","vectors":42,"bytes":195648000}] std::cout << Render(t, OutputFormat::kTable);
//   // ... docs  42  186.6 MiB
//
// A Cell holds a typed JSON value (nlohmann::json: numbers as numbers, vectors and lists as
// arrays, empty lists as [], attributes as an object) and the text a table shows for it (byte
// sizes and durations in human units). JSON: an array of objects, one per row; with `single`
// set, the one row's object alone. CSV: RFC 4180 (a header line, fields quoted when they hold
// , " or a line break); byte sizes and durations as plain numbers, lists as comma-joined text.
// Plain data; thread-compatible.
#ifndef SHOAL_CLI_OUTPUT_H_
#define SHOAL_CLI_OUTPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace shoal::cli {

enum class OutputFormat { kTable, kJson, kCsv };

// "table", "json" or "csv"; InvalidArgument naming --output otherwise.
absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name);

class Cell {
 public:
  static Cell Text(std::string text);
  static Cell Number(uint64_t value);
  static Cell Number(int64_t value);
  static Cell Number(float value);   // shortest text that reads back as the same float
  static Cell Number(double value);  // 9 significant digits; NaN and infinities are null
  static Cell Bool(bool value);
  static Cell Null();
  // JSON: the number; table: "186.6 MiB" (binary units).
  static Cell Bytes(uint64_t bytes);
  // JSON: the number of seconds; table: "85.5 s", "1 min 25 s", "2 h 3 min", "1.2 ms".
  static Cell Seconds(double seconds);
  // JSON: an array of the items; table and CSV: their texts joined by ",".
  static Cell List(const std::vector<Cell>& items);
  // JSON: an object; table and CSV: "name=value" pairs joined by ",".
  static Cell Object(const std::vector<std::pair<std::string, Cell>>& fields);

  bool is_null() const { return json_.is_null(); }
  // What a table shows ("-" for null).
  const std::string& text() const { return text_; }
  const nlohmann::ordered_json& json() const { return json_; }

 private:
  Cell(nlohmann::ordered_json json, std::string text, bool human = false)
      : json_(std::move(json)), text_(std::move(text)), human_(human) {}

  nlohmann::ordered_json json_;
  std::string text_;
  bool human_;  // text_ is in human units (Bytes, Seconds): CSV prints the JSON number instead

  friend std::string CsvText(const Cell& cell);
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;  // each as wide as `columns`
  bool single = false;                  // one object, not a list (describe, stats)
};

// A table with no columns renders as nothing (commands that only succeed).
std::string Render(const Table& table, OutputFormat format);

}  // namespace shoal::cli

#endif  // SHOAL_CLI_OUTPUT_H_
