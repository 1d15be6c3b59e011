#include "index/spann/spann_options.h"

#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shoal::index {
namespace {

absl::Status Bad(const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("spec.", key, ": ", what));
}

template <typename T>
absl::Status ParseNumber(const std::string& key, const std::string& value, double lo, double hi,
                         T* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
    return Bad(key, absl::StrCat("'", value, "' is not a number"));
  }
  if (v < lo || v > hi) return Bad(key, absl::StrCat(value, " is not in ", lo, "..", hi));
  if (std::is_integral_v<T> && v != std::floor(v)) {
    return Bad(key, absl::StrCat(value, " is not an integer"));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

using Setter = std::function<absl::Status(const std::string&, const std::string&, SpannOptions*)>;

template <typename T>
Setter Number(T SpannOptions::*field, double lo, double hi) {
  return [=](const std::string& k, const std::string& v, SpannOptions* o) {
    return ParseNumber(k, v, lo, hi, &(o->*field));
  };
}

const std::map<std::string, Setter>& Setters() {
  static const auto* setters = new std::map<std::string, Setter>{
      {"centroid_ratio", Number(&SpannOptions::centroid_ratio, 1e-6, 0.5)},
      {"replicas", Number(&SpannOptions::replicas, 1, 16)},
      {"rng_factor", Number(&SpannOptions::rng_factor, 0.01, 100)},
      {"closure", Number(&SpannOptions::closure, 1, 100)},
      {"posting_cap", Number(&SpannOptions::posting_cap, 0, 1 << 20)},
      {"max_postings", Number(&SpannOptions::max_postings, 1, 1 << 20)},
      {"pruning_ratio", Number(&SpannOptions::pruning_ratio, 0, 1e6)},
      {"beam", Number(&SpannOptions::beam, 1, 1 << 16)},
      {"branching", Number(&SpannOptions::branching, 2, 1024)},
      {"iterations", Number(&SpannOptions::iterations, 1, 1000)},
      {"seed", Number(&SpannOptions::seed, 0, 9.0e15)},
      {"target_recall", Number(&SpannOptions::target_recall, 0, 1)},
      {"calibration_queries", Number(&SpannOptions::calibration_queries, 0, 100000)},
      {"quant",
       [](const std::string& k, const std::string& v, SpannOptions* o) {
         const bool rabitq = v.rfind("rabitq", 0) == 0;
         if (v != "none" && v != "sq8" && !rabitq)
           return Bad(k, "must be none, sq8 or rabitq:bits=B");
         o->quant = v;
         return absl::OkStatus();
       }},
      {"centroids",
       [](const std::string& k, const std::string& v, SpannOptions* o) {
         if (v != "ratio" && v != "data") return Bad(k, "must be ratio or data");
         o->centroids_from_data = v == "data";
         return absl::OkStatus();
       }},
      {"navigator",
       [](const std::string& k, const std::string& v, SpannOptions* o) {
         if (v != "flat" && v != "tree" && v != "auto") return Bad(k, "must be flat, tree or auto");
         o->navigator = v;
         return absl::OkStatus();
       }},
  };
  return *setters;
}

}  // namespace

bool IsAutoSpec(const std::string& spec) {
  return spec.empty() || spec == "auto" || spec == "spann:auto" ||
         spec.rfind("spann:auto,", 0) == 0;
}

absl::StatusOr<SpannOptions> ParseSpannSpec(const std::string& spec) {
  return ParseSpannSpec(spec, SpannOptions());
}

absl::StatusOr<SpannOptions> ParseSpannSpec(const std::string& spec, const SpannOptions& base) {
  std::vector<std::string> head = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (head[0] != "spann") {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: unknown index '", head[0], "' (expected flat, auto or spann:...)"));
  }
  SpannOptions o = base;
  if (head.size() == 1 || head[1].empty()) return o;
  for (absl::string_view item_view : absl::StrSplit(head[1], ',')) {
    const std::string item(item_view);
    if (item == "auto") continue;  // the caller chose `base` (IsAutoSpec)
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) return Bad(kv[0], "expected key=value");
    auto it = Setters().find(kv[0]);
    if (it == Setters().end()) return Bad(kv[0], "unknown key");
    if (absl::Status s = it->second(kv[0], kv[1], &o); !s.ok()) return s;
  }
  if (o.pruning_ratio != 0 && o.pruning_ratio < 1) {
    return Bad("pruning_ratio", "must be 0 (off) or >= 1");
  }
  return o;
}

std::string SpannSpecString(const SpannOptions& o) {
  return absl::StrCat(
      "spann:centroid_ratio=", o.centroid_ratio,
      ",centroids=", o.centroids_from_data ? "data" : "ratio", ",replicas=", o.replicas,
      ",rng_factor=", o.rng_factor, ",closure=", o.closure, ",posting_cap=", o.posting_cap,
      ",max_postings=", o.max_postings, ",pruning_ratio=", o.pruning_ratio,
      ",navigator=", o.navigator, ",beam=", o.beam, ",branching=", o.branching,
      ",iterations=", o.iterations, ",seed=", o.seed, ",quant=", o.quant,
      ",target_recall=", o.target_recall, ",calibration_queries=", o.calibration_queries);
}

namespace {

// "4:0.91;8:0.97" (max_postings:recall, ascending).
std::string EncodeCalibration(const std::vector<CalibrationPoint>& table) {
  std::string out;
  for (const CalibrationPoint& p : table) {
    absl::StrAppend(&out, out.empty() ? "" : ";", p.max_postings, ":", p.recall);
  }
  return out;
}

bool DecodeCalibration(const std::string& text, std::vector<CalibrationPoint>* table) {
  table->clear();
  for (absl::string_view item : absl::StrSplit(text, ';', absl::SkipEmpty())) {
    std::vector<absl::string_view> p = absl::StrSplit(item, ':');
    CalibrationPoint c;
    if (p.size() != 2 || !absl::SimpleAtoi(p[0], &c.max_postings) ||
        !absl::SimpleAtof(p[1], &c.recall) || c.max_postings == 0 || !(c.recall >= 0) ||
        c.recall > 1 || (!table->empty() && table->back().max_postings >= c.max_postings)) {
      return false;
    }
    table->push_back(c);
  }
  return true;
}

// "0.25@4:0.91;8:0.97|0.0625@..." (density@table, descending density).
std::string EncodeRestricted(const std::vector<DensityCalibration>& levels) {
  std::string out;
  for (const DensityCalibration& d : levels) {
    absl::StrAppend(&out, out.empty() ? "" : "|", d.density, "@", EncodeCalibration(d.table));
  }
  return out;
}

bool DecodeRestricted(const std::string& text, std::vector<DensityCalibration>* levels) {
  levels->clear();
  for (absl::string_view item : absl::StrSplit(text, '|', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(item, absl::MaxSplits('@', 1));
    DensityCalibration d;
    if (p.size() != 2 || !absl::SimpleAtof(p[0], &d.density) || !(d.density > 0) ||
        d.density >= 1 || (!levels->empty() && levels->back().density <= d.density) ||
        !DecodeCalibration(p[1], &d.table) || d.table.empty()) {
      return false;
    }
    levels->push_back(std::move(d));
  }
  return true;
}

// "1.3@4:0.91:3.2;8:0.97:5.1|1.45@..." (ratio@max_postings:recall:postings, ascending ratio).
std::string EncodePruned(const std::vector<PrunedCalibration>& levels) {
  std::string out;
  for (const PrunedCalibration& c : levels) {
    absl::StrAppend(&out, out.empty() ? "" : "|", c.ratio, "@");
    for (size_t i = 0; i < c.table.size(); ++i) {
      const PrunedPoint& p = c.table[i];
      absl::StrAppend(&out, i == 0 ? "" : ";", p.max_postings, ":", p.recall, ":", p.postings);
    }
  }
  return out;
}

bool DecodePrunedTable(absl::string_view text, std::vector<PrunedPoint>* table) {
  for (absl::string_view item : absl::StrSplit(text, ';', absl::SkipEmpty())) {
    std::vector<absl::string_view> p = absl::StrSplit(item, ':');
    PrunedPoint c;
    if (p.size() != 3 || !absl::SimpleAtoi(p[0], &c.max_postings) ||
        !absl::SimpleAtof(p[1], &c.recall) || !absl::SimpleAtof(p[2], &c.postings) ||
        c.max_postings == 0 || !(c.recall >= 0) || c.recall > 1 || !(c.postings >= 0) ||
        c.postings > c.max_postings ||
        (!table->empty() && table->back().max_postings >= c.max_postings)) {
      return false;
    }
    table->push_back(c);
  }
  return !table->empty();
}

bool DecodePruned(const std::string& text, std::vector<PrunedCalibration>* levels) {
  levels->clear();
  for (absl::string_view item : absl::StrSplit(text, '|', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(item, absl::MaxSplits('@', 1));
    PrunedCalibration c;
    if (p.size() != 2 || !absl::SimpleAtof(p[0], &c.ratio) || !(c.ratio >= 1) ||
        (!levels->empty() && levels->back().ratio >= c.ratio) ||
        !DecodePrunedTable(p[1], &c.table)) {
      return false;
    }
    levels->push_back(std::move(c));
  }
  return true;
}

}  // namespace

std::string EncodeManifest(const SpannManifest& m) {
  return absl::StrCat("shoal-spann-v2\nspec=", SpannSpecString(m.options),
                      "\ndimension=", m.dimension, "\nmetric=", static_cast<int>(m.metric),
                      "\ngeneration=", m.generation, "\nnum_vectors=", m.num_vectors,
                      "\nindexed_below=", m.indexed_below, "\nnum_postings=", m.num_postings,
                      "\nposting_cap=", m.posting_cap,
                      "\ncalibration=", EncodeCalibration(m.calibration),
                      "\nrestricted_calibration=", EncodeRestricted(m.restricted),
                      "\npruned_calibration=", EncodePruned(m.pruned), "\n");
}

absl::StatusOr<SpannManifest> DecodeManifest(const std::string& text, const std::string& where) {
  auto corrupt = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(where, ": corrupt index manifest: ", what));
  };
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  // v1: written before calibration; it has no calibration line.
  if (lines.empty() || (lines[0] != "shoal-spann-v1" && lines[0] != "shoal-spann-v2")) {
    return corrupt("bad header");
  }
  std::map<std::string, std::string> kv;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> p = absl::StrSplit(lines[i], absl::MaxSplits('=', 1));
    if (p.size() != 2) return corrupt(absl::StrCat("line ", i + 1));
    kv[p[0]] = p[1];
  }
  SpannManifest m;
  auto options = ParseSpannSpec(kv["spec"]);
  if (!options.ok()) return corrupt(std::string(options.status().message()));
  m.options = *options;
  int metric = 0;
  if (!absl::SimpleAtoi(kv["dimension"], &m.dimension) ||
      !absl::SimpleAtoi(kv["metric"], &metric) ||
      !absl::SimpleAtoi(kv["generation"], &m.generation) ||
      !absl::SimpleAtoi(kv["num_vectors"], &m.num_vectors) ||
      !absl::SimpleAtoi(kv["indexed_below"], &m.indexed_below) ||
      !absl::SimpleAtoi(kv["num_postings"], &m.num_postings) ||
      !absl::SimpleAtoi(kv["posting_cap"], &m.posting_cap) || metric < 0 || metric > 1) {
    return corrupt("missing or bad number");
  }
  m.metric = static_cast<Metric>(metric);
  if (lines[0] == "shoal-spann-v2" &&
      (!kv.contains("calibration") || !DecodeCalibration(kv["calibration"], &m.calibration))) {
    return corrupt("bad calibration");
  }
  if (kv.contains("restricted_calibration") &&
      !DecodeRestricted(kv["restricted_calibration"], &m.restricted)) {
    return corrupt("bad restricted calibration");
  }
  if (kv.contains("pruned_calibration") && !DecodePruned(kv["pruned_calibration"], &m.pruned)) {
    return corrupt("bad pruned calibration");
  }
  return m;
}

}  // namespace shoal::index
