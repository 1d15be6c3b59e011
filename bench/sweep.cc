#include "bench/sweep.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shoal::bench {

absl::StatusOr<std::vector<double>> ParseNumberList(const std::string& text,
                                                    const std::string& what) {
  std::vector<double> values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    double value = 0;
    if (!absl::SimpleAtod(item, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", item, "' is not a number (in '", text, "')"));
    }
    values.push_back(value);
  }
  return values;
}

absl::StatusOr<std::vector<GridPoint>> ParseGrid(const std::string& text) {
  std::vector<GridPoint> points = {{}};
  for (absl::string_view axis : absl::StrSplit(text, ';', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(axis, absl::MaxSplits('=', 1));
    const std::string key(absl::StripAsciiWhitespace(kv.first));
    if (key.empty() || axis.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep: '", axis, "' is not key=v1,v2,... (in '", text, "')"));
    }
    for (const auto& [k, v] : points.front()) {
      if (k == key) return absl::InvalidArgumentError(absl::StrCat("sweep: repeated key ", key));
    }
    auto parsed = ParseNumberList(kv.second, absl::StrCat("sweep ", key));
    if (!parsed.ok()) return parsed.status();
    std::vector<GridPoint> next;
    for (const GridPoint& p : points) {
      for (double v : *parsed) {
        next.push_back(p);
        next.back().emplace_back(key, v);
      }
    }
    points = std::move(next);
  }
  return points;
}

std::string GridPointString(const GridPoint& point) {
  std::string out;
  for (const auto& [key, value] : point) {
    absl::StrAppend(&out, out.empty() ? "" : ";", key, "=", absl::StrFormat("%g", value));
  }
  return out;
}

std::vector<std::string> GridPointStrings(const std::vector<GridPoint>& points) {
  std::vector<std::string> out;
  for (const GridPoint& p : points) out.push_back(GridPointString(p));
  return out;
}

}  // namespace shoal::bench
