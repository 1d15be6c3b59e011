#include "cli/output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"

namespace shoal::cli {
namespace {

std::string CsvField(const Cell& cell) {
  if (cell.text.find_first_of(",\"\r\n") == std::string::npos) return cell.text;
  std::string out = "\"";
  for (char c : cell.text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string JsonValue(const Cell& cell) {
  switch (cell.kind) {
    case Cell::Kind::kText:
      return JsonQuote(cell.text);
    case Cell::Kind::kNumber:
    case Cell::Kind::kBool:
      return cell.text;
    case Cell::Kind::kNull:
      return "null";
  }
  return "null";
}

std::string JsonObject(const Table& table, const std::vector<Cell>& row) {
  std::string out = "{";
  for (size_t c = 0; c < table.columns.size(); ++c) {
    absl::StrAppend(&out, c == 0 ? "" : ",", JsonQuote(table.columns[c]), ":", JsonValue(row[c]));
  }
  out.push_back('}');
  return out;
}

std::string RenderText(const Table& table) {
  std::vector<size_t> width(table.columns.size());
  for (size_t c = 0; c < width.size(); ++c) {
    width[c] = table.columns[c].size();
    for (const auto& row : table.rows) width[c] = std::max(width[c], row[c].text.size());
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
    out += line([&](size_t c) { return row[c].kind == Cell::Kind::kNull ? "-" : row[c].text; });
  }
  if (table.rows.empty()) out += "(none)\n";
  return out;
}

}  // namespace

absl::StatusOr<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "json") return OutputFormat::kJson;
  if (name == "csv") return OutputFormat::kCsv;
  return UsageError(
      absl::StrCat("--output: \"", std::string(name), "\" is not one of table, json, csv"));
}

Cell Cell::Number(double value) {
  // JSON has no NaN/Inf; they print as null.
  if (!std::isfinite(value)) return Null();
  return {Kind::kNumber, absl::StrFormat("%.9g", value)};
}

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string Render(const Table& table, OutputFormat format) {
  if (table.columns.empty()) return "";
  switch (format) {
    case OutputFormat::kTable:
      return RenderText(table);
    case OutputFormat::kCsv: {
      std::string out;
      for (size_t c = 0; c < table.columns.size(); ++c) {
        absl::StrAppend(&out, c == 0 ? "" : ",", CsvField(Cell::Text(table.columns[c])));
      }
      out.push_back('\n');
      for (const auto& row : table.rows) {
        for (size_t c = 0; c < row.size(); ++c) {
          absl::StrAppend(&out, c == 0 ? "" : ",", CsvField(row[c]));
        }
        out.push_back('\n');
      }
      return out;
    }
    case OutputFormat::kJson: {
      if (table.single && table.rows.size() == 1) return JsonObject(table, table.rows[0]) + "\n";
      std::string out = "[";
      for (size_t r = 0; r < table.rows.size(); ++r) {
        absl::StrAppend(&out, r == 0 ? "" : ",", JsonObject(table, table.rows[r]));
      }
      return out + "]\n";
    }
  }
  return "";
}

}  // namespace shoal::cli
