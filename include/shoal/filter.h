// Metadata filters for search: which records a search may return, decided from their attributes
// and tags. The filter is applied during the scan (records that fail it are never scored), so a
// filter that few records pass still returns k hits when k pass.
//
//   using shoal::And, shoal::Eq, shoal::HasTag, shoal::Not, shoal::Range;
//   shoal::Filter f = And({Eq("lang", "en"), Range("price", 10, 99.5), Not(HasTag("sold"))});
//   auto hits = db->Search("docs", query, {.k = 10, .filter = &f});
//
// Leaves:
//   Eq(name, value)      attribute `name` equals `value`. Numbers compare numerically across
//                        int64 and double (Eq("n", 3) matches 3 and 3.0); strings and bools match
//                        only their own type.
//   Range(name, lo, hi)  numeric attribute (int64 or double) with lo <= value <= hi, compared
//                        exactly (an int64 is never rounded to a double); +-infinity leaves a side
//                        open. Bool and string attributes never match.
//   HasTag(tag)          the record's tags contain `tag`.
// Combinators: And (all of, >= 1 operand), Or (any of, >= 1 operand), Not (exactly 1 operand; the
// live records that fail it).
// An attribute name or tag no record has matches nothing (it is not an error).
//
// Invalid filters are InvalidArgument from Search, naming the node, e.g.
// "filter.and[1].range.lo: NaN": an empty And/Or, a Not without exactly one operand, a leaf with
// operands, a NaN bound or NaN value, lo > hi, a bad attribute name or tag, deeper than
// kMaxFilterDepth or more than kMaxFilterNodes nodes.
//
// Filter is a plain value type (a tree owned by value; copies are deep); no thread-safety concerns
// of its own. A default-constructed Filter is an empty And and therefore invalid: build filters
// with the functions below.
#ifndef SHOAL_FILTER_H_
#define SHOAL_FILTER_H_

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "shoal/types.h"

namespace shoal {

inline constexpr size_t kMaxFilterDepth = 32;
inline constexpr size_t kMaxFilterNodes = 1024;

struct Filter {
  enum class Op { kAnd = 0, kOr = 1, kNot = 2, kEq = 3, kRange = 4, kHasTag = 5 };

  Op op = Op::kAnd;
  std::string name;                   // kEq, kRange: the attribute name; kHasTag: the tag
  AttributeValue value = int64_t{0};  // kEq
  double lo = -std::numeric_limits<double>::infinity();  // kRange, inclusive
  double hi = std::numeric_limits<double>::infinity();   // kRange, inclusive
  std::vector<Filter> operands;                          // kAnd, kOr (>= 1), kNot (exactly 1)
};

inline Filter Eq(std::string name, AttributeValue value) {
  Filter f;
  f.op = Filter::Op::kEq;
  f.name = std::move(name);
  f.value = std::move(value);
  return f;
}

inline Filter Range(std::string name, double lo, double hi) {
  Filter f;
  f.op = Filter::Op::kRange;
  f.name = std::move(name);
  f.lo = lo;
  f.hi = hi;
  return f;
}

inline Filter HasTag(std::string tag) {
  Filter f;
  f.op = Filter::Op::kHasTag;
  f.name = std::move(tag);
  return f;
}

inline Filter And(std::vector<Filter> operands) {
  Filter f;
  f.op = Filter::Op::kAnd;
  f.operands = std::move(operands);
  return f;
}

inline Filter Or(std::vector<Filter> operands) {
  Filter f;
  f.op = Filter::Op::kOr;
  f.operands = std::move(operands);
  return f;
}

inline Filter Not(Filter operand) {
  Filter f;
  f.op = Filter::Op::kNot;
  f.operands.push_back(std::move(operand));
  return f;
}

}  // namespace shoal

#endif  // SHOAL_FILTER_H_
