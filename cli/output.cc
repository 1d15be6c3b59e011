#include "cli/output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"

namespace shoal::cli {
namespace {

// Invalid UTF-8 in a server's text becomes U+FFFD instead of an exception.
std::string Dump(const nlohmann::ordered_json& json) {
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

nlohmann::ordered_json JsonObject(const Table& table, const std::vector<Cell>& row) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (size_t c = 0; c < table.columns.size(); ++c) object[table.columns[c]] = row[c].json();
  return object;
}

// One decimal below 1000 units: "930 B", "1.5 KiB", "186.6 MiB", "1012 GiB".
std::string ByteText(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat(value < 1000 ? "%.1f %s" : "%.0f %s", value, kUnits[unit]);
}

std::string SecondsText(double seconds) {
  if (seconds < 0.001) return absl::StrFormat("%.0f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.1f ms", seconds * 1e3);
  if (seconds < 60) return absl::StrFormat("%.1f s", seconds);
  const uint64_t whole = static_cast<uint64_t>(seconds);
  if (whole < 3600) return absl::StrCat(whole / 60, " min ", whole % 60, " s");
  if (whole < 86400) return absl::StrCat(whole / 3600, " h ", whole / 60 % 60, " min");
  return absl::StrCat(whole / 86400, " d ", whole / 3600 % 24, " h");
}

std::string RenderText(const Table& table) {
  std::vector<size_t> width(table.columns.size());
  for (size_t c = 0; c < width.size(); ++c) {
    width[c] = table.columns[c].size();
    for (const auto& row : table.rows) width[c] = std::max(width[c], row[c].text().size());
  }
  auto line = [&](auto cell_text) {
    std::string out;
    for (size_t c = 0; c < width.size(); ++c) {
      std::string text = cell_text(c);
      if (c + 1 < width.size()) text.resize(width[c], ' ');
      absl::StrAppend(&out, c == 0 ? "" : "  ", text);
    }
    out.push_back('\n');
    return out;
  };
  std::string out = line([&](size_t c) { return table.columns[c]; });
  for (const auto& row : table.rows) {
    out += line([&](size_t c) { return row[c].is_null() ? std::string("-") : row[c].text(); });
  }
  if (table.rows.empty()) out += "(none)\n";
  return out;
}

}  // namespace

// Byte sizes and durations as plain numbers (as in JSON), not the table's human units.
std::string CsvText(const Cell& cell) { return cell.human_ ? Dump(cell.json_) : cell.text_; }

absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "json") return OutputFormat::kJson;
  if (name == "csv") return OutputFormat::kCsv;
  return UsageError(
      absl::StrCat("--output: \"", std::string(name), "\" is not one of table, json, csv"));
}

Cell Cell::Text(std::string text) { return Cell(text, text); }

Cell Cell::Number(uint64_t value) { return Cell(value, std::to_string(value)); }

Cell Cell::Number(int64_t value) { return Cell(value, std::to_string(value)); }

Cell Cell::Number(float value) {
  if (!std::isfinite(value)) return Null();
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, end);
  // The double nearest to the shortest text, so that JSON prints that text too.
  return Cell(std::strtod(text.c_str(), nullptr), text);
}

Cell Cell::Number(double value) {
  // JSON has no NaN/Inf; they print as null.
  if (!std::isfinite(value)) return Null();
  std::string text = absl::StrFormat("%.9g", value);
  return Cell(std::strtod(text.c_str(), nullptr), text);
}

Cell Cell::Bool(bool value) { return Cell(value, value ? "true" : "false"); }

Cell Cell::Null() { return Cell(nullptr, ""); }

Cell Cell::Bytes(uint64_t bytes) { return Cell(bytes, ByteText(bytes), /*human=*/true); }

Cell Cell::Seconds(double seconds) {
  if (!std::isfinite(seconds)) return Null();
  Cell number = Number(seconds);
  return Cell(number.json(), SecondsText(seconds), /*human=*/true);
}

Cell Cell::List(const std::vector<Cell>& items) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  std::string text;
  for (const Cell& item : items) {
    array.push_back(item.json());
    absl::StrAppend(&text, text.empty() ? "" : ",", item.text());
  }
  return Cell(std::move(array), std::move(text));
}

Cell Cell::Object(const std::vector<std::pair<std::string, Cell>>& fields) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  std::string text;
  for (const auto& [name, value] : fields) {
    object[name] = value.json();
    absl::StrAppend(&text, text.empty() ? "" : ",", name, "=", value.text());
  }
  return Cell(std::move(object), std::move(text));
}

std::string Render(const Table& table, OutputFormat format) {
  if (table.columns.empty()) return "";
  switch (format) {
    case OutputFormat::kTable:
      return RenderText(table);
    case OutputFormat::kCsv: {
      std::string out;
      for (size_t c = 0; c < table.columns.size(); ++c) {
        absl::StrAppend(&out, c == 0 ? "" : ",", CsvField(table.columns[c]));
      }
      out.push_back('\n');
      for (const auto& row : table.rows) {
        for (size_t c = 0; c < row.size(); ++c) {
          absl::StrAppend(&out, c == 0 ? "" : ",", CsvField(CsvText(row[c])));
        }
        out.push_back('\n');
      }
      return out;
    }
    case OutputFormat::kJson: {
      if (table.single && table.rows.size() == 1) {
        return Dump(JsonObject(table, table.rows[0])) + "\n";
      }
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& row : table.rows) rows.push_back(JsonObject(table, row));
      return Dump(rows) + "\n";
    }
  }
  return "";
}

}  // namespace shoal::cli
