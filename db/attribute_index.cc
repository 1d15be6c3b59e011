#include "db/attribute_index.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shoal::db {
namespace {

// Three-way comparison of an int64 with a (non-NaN) double, exact: converting the int64 to
// double would round above 2^53 and make Range("n", 2^53, 2^53) match 2^53 + 1.
int Compare(int64_t v, double d) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return -1;
  if (d < -kTwo63) return 1;
  const double whole = std::trunc(d);
  const auto t = static_cast<int64_t>(whole);
  if (v != t) return v < t ? -1 : 1;
  const double frac = d - whole;
  return frac > 0 ? -1 : (frac < 0 ? 1 : 0);
}

// Sets the ids of the ints v in [lo, hi] (Compare: exact) from the column's ordered ints.
void SetIntsIn(const absl::btree_set<std::pair<int64_t, uint64_t>>& by_value, double lo, double hi,
               index::IdBitmap* out) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (lo >= kTwo63 || hi < -kTwo63 || lo > hi) return;
  // The first int at or above lo; ceil(lo) below 2^63 converts exactly (a double of 2^53 or more
  // is whole).
  const double first = std::ceil(lo);
  const int64_t start = lo <= -kTwo63 ? std::numeric_limits<int64_t>::min()
                                      : (first >= kTwo63 ? std::numeric_limits<int64_t>::max()
                                                         : static_cast<int64_t>(first));
  for (auto it = by_value.lower_bound({start, 0}); it != by_value.end(); ++it) {
    if (Compare(it->first, hi) > 0) break;
    if (Compare(it->first, lo) >= 0) out->Set(it->second);
  }
}

// Sets the ids of the doubles v in [lo, hi] that `keep` accepts, from the column's ordered doubles.
template <typename Keep>
void SetDoublesIn(const absl::btree_set<std::pair<double, uint64_t>>& by_value, double lo,
                  double hi, const Keep& keep, index::IdBitmap* out) {
  for (auto it = by_value.lower_bound({lo, 0}); it != by_value.end() && it->first <= hi; ++it) {
    if (lo <= it->first && keep(it->first)) out->Set(it->second);
  }
}

}  // namespace

void AttributeIndex::Put(uint64_t id, const std::map<std::string, AttributeValue>& attributes,
                         const std::vector<std::string>& tags) {
  Remove(id);
  live_.Set(id);
  ++live_count_;
  if (attributes.empty() && tags.empty()) return;
  Entry entry;
  entry.columns.reserve(attributes.size());
  for (const auto& [name, value] : attributes) {
    auto [it, fresh] = column_of_.try_emplace(name, static_cast<uint32_t>(columns_.size()));
    if (fresh) columns_.emplace_back();
    Column& column = columns_[it->second];
    entry.columns.push_back(it->second);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            column.ints.Set(id, v);
            column.ints_by_value.insert({v, id});
          }
          if constexpr (std::is_same_v<T, double>) {
            column.doubles.Set(id, v);
            column.doubles_by_value.insert({v, id});
          }
          if constexpr (std::is_same_v<T, bool>) {
            (v ? column.ids_true : column.ids_false).insert(id);
          }
          if constexpr (std::is_same_v<T, std::string>) {
            column.strings.Set(id, v);
            column.ids_of_string[v].insert(id);
          }
        },
        value);
  }
  entry.tags.reserve(tags.size());
  for (const std::string& tag : tags) {
    auto [it, fresh] = tag_of_.try_emplace(tag, static_cast<uint32_t>(tag_ids_.size()));
    if (fresh) tag_ids_.emplace_back();
    // A record may repeat a tag; the set keeps one and Remove erases it once.
    if (tag_ids_[it->second].insert(id)) entry.tags.push_back(it->second);
  }
  entries_.Insert(id, std::move(entry));
}

void AttributeIndex::Remove(uint64_t id) {
  if (!live_.Test(id)) return;
  live_.Reset(id);
  --live_count_;
  const Entry* entry = entries_.Find(id);
  if (entry == nullptr) return;
  for (uint32_t c : entry->columns) {
    Column& column = columns_[c];
    if (const int64_t* v = column.ints.Find(id)) column.ints_by_value.erase({*v, id});
    if (const double* v = column.doubles.Find(id)) column.doubles_by_value.erase({*v, id});
    column.ids_true.erase(id);
    column.ids_false.erase(id);
    if (const std::string* v = column.strings.Find(id)) {
      const auto group = column.ids_of_string.find(*v);
      if (group != column.ids_of_string.end()) {
        group->second.erase(id);
        if (group->second.empty()) column.ids_of_string.erase(group);
      }
    }
    column.ints.Erase(id);
    column.doubles.Erase(id);
    column.strings.Erase(id);
  }
  for (uint32_t t : entry->tags) tag_ids_[t].erase(id);
  entries_.Erase(id);
}

// A leaf kept as one set of ids (LeafIds) is that set; any other is a number's Eq or Range, read
// from the column's values ordered by value.
index::IdBitmap AttributeIndex::EvaluateLeaf(const Filter& leaf) const {
  index::IdBitmap out;
  const tenants::CompactIdSet* ids = nullptr;
  if (LeafIds(leaf, &ids)) {
    if (ids != nullptr) ids->ForEach([&out](uint64_t id) { out.Set(id); });
    return out;
  }
  auto it = column_of_.find(leaf.name);
  if (it == column_of_.end()) return out;
  const Column& column = columns_[it->second];
  if (leaf.op == Filter::Op::kRange) {
    SetIntsIn(column.ints_by_value, leaf.lo, leaf.hi, &out);
    SetDoublesIn(
        column.doubles_by_value, leaf.lo, leaf.hi, [](double) { return true; }, &out);
  } else if (const auto* want = std::get_if<int64_t>(&leaf.value)) {
    for (auto i = column.ints_by_value.lower_bound({*want, 0});
         i != column.ints_by_value.end() && i->first == *want; ++i) {
      out.Set(i->second);
    }
    // The doubles equal to `want` exactly lie next to its nearest double.
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const double near = static_cast<double>(*want);
    SetDoublesIn(
        column.doubles_by_value, std::nextafter(near, -kInf), std::nextafter(near, kInf),
        [&](double v) { return Compare(*want, v) == 0; }, &out);
  } else if (const auto* want = std::get_if<double>(&leaf.value)) {
    SetIntsIn(column.ints_by_value, *want, *want, &out);
    SetDoublesIn(
        column.doubles_by_value, *want, *want, [](double) { return true; }, &out);
  }
  return out;
}

std::string AttributeIndex::LeafWarning(const Filter& leaf) const {
  if (leaf.op == Filter::Op::kHasTag) {
    auto it = tag_of_.find(leaf.name);
    if (it != tag_of_.end() && !tag_ids_[it->second].empty()) return "";
    return absl::StrCat("filter: no record has tag '", leaf.name, "'");
  }
  auto it = column_of_.find(leaf.name);
  const Column* column = it == column_of_.end() ? nullptr : &columns_[it->second];
  if (column == nullptr || (column->ints.empty() && column->doubles.empty() &&
                            !column->HoldsBooleans() && column->strings.empty())) {
    return absl::StrCat("filter: no record has attribute '", leaf.name, "'");
  }
  const bool numbers = !column->ints.empty() || !column->doubles.empty();
  const char* wanted =
      nullptr;  // the type the leaf compares with, when the attribute never holds it
  if (leaf.op == Filter::Op::kRange) {
    if (!numbers) wanted = "a number range";
  } else if (std::holds_alternative<bool>(leaf.value)) {
    if (!column->HoldsBooleans()) wanted = "a boolean";
  } else if (std::holds_alternative<std::string>(leaf.value)) {
    if (column->strings.empty()) wanted = "a string";
  } else if (!numbers) {
    wanted = "a number";
  }
  if (wanted == nullptr) return "";
  std::vector<std::string> held;
  if (numbers) held.push_back("numbers");
  if (column->HoldsBooleans()) held.push_back("booleans");
  if (!column->strings.empty()) held.push_back("strings");
  return absl::StrCat("filter: attribute '", leaf.name, "' holds only ",
                      absl::StrJoin(held, " and "), ", compared with ", wanted,
                      ": the comparison matches no record");
}

std::vector<std::string> AttributeIndex::FilterWarnings(const Filter& filter) const {
  std::vector<std::string> out;
  std::vector<const Filter*> stack = {&filter};
  while (!stack.empty() && out.size() < kMaxFilterWarnings) {
    const Filter* f = stack.back();
    stack.pop_back();
    if (f->op == Filter::Op::kAnd || f->op == Filter::Op::kOr || f->op == Filter::Op::kNot) {
      for (auto it = f->operands.rbegin(); it != f->operands.rend(); ++it) stack.push_back(&*it);
      continue;
    }
    std::string w = LeafWarning(*f);
    if (!w.empty() && std::find(out.begin(), out.end(), w) == out.end())
      out.push_back(std::move(w));
  }
  return out;
}

index::IdBitmap AttributeIndex::Evaluate(const Filter& filter) const {
  switch (filter.op) {
    case Filter::Op::kEq:
    case Filter::Op::kRange:
    case Filter::Op::kHasTag:
      return EvaluateLeaf(filter);
    case Filter::Op::kNot: {
      index::IdBitmap out = live_;
      if (!filter.operands.empty()) out.AndNot(Evaluate(filter.operands[0]));
      return out;
    }
    case Filter::Op::kAnd:
    case Filter::Op::kOr: {
      if (filter.operands.empty()) return {};
      index::IdBitmap out = Evaluate(filter.operands[0]);
      for (size_t i = 1; i < filter.operands.size(); ++i) {
        if (filter.op == Filter::Op::kAnd) {
          out.And(Evaluate(filter.operands[i]));
        } else {
          out.Or(Evaluate(filter.operands[i]));
        }
      }
      return out;
    }
  }
  return {};  // an unknown op matches nothing (ValidateFilter rejects it first)
}

// An Eq of a number or a Range on one id, as EvaluateLeaf decides it
// (attribute_index_test checks that both agree on random filters).
bool AttributeIndex::MatchesNumber(const Column& column, const Filter& leaf, uint64_t id) {
  const int64_t* i = column.ints.Find(id);
  const double* d = column.doubles.Find(id);
  if (leaf.op == Filter::Op::kRange) {
    if (i != nullptr) return Compare(*i, leaf.lo) >= 0 && Compare(*i, leaf.hi) <= 0;
    return d != nullptr && leaf.lo <= *d && *d <= leaf.hi;
  }
  if (const auto* want = std::get_if<int64_t>(&leaf.value)) {
    return (i != nullptr && *i == *want) || (d != nullptr && Compare(*want, *d) == 0);
  }
  if (const auto* want = std::get_if<double>(&leaf.value)) {
    return (i != nullptr && Compare(*i, *want) == 0) || (d != nullptr && *d == *want);
  }
  return false;  // a string or a boolean: a set of ids (LeafIds)
}

bool AttributeIndex::LeafIds(const Filter& leaf, const tenants::CompactIdSet** ids) const {
  *ids = nullptr;
  const tenants::CompactIdSet* set = nullptr;
  if (leaf.op == Filter::Op::kHasTag) {
    const auto it = tag_of_.find(leaf.name);
    if (it != tag_of_.end()) set = &tag_ids_[it->second];
  } else if (leaf.op == Filter::Op::kEq) {
    const auto* text = std::get_if<std::string>(&leaf.value);
    const auto* flag = std::get_if<bool>(&leaf.value);
    if (text == nullptr && flag == nullptr) return false;
    const auto it = column_of_.find(leaf.name);
    if (it != column_of_.end()) {
      const Column& column = columns_[it->second];
      if (flag != nullptr) {
        set = *flag ? &column.ids_true : &column.ids_false;
      } else if (const auto group = column.ids_of_string.find(*text);
                 group != column.ids_of_string.end()) {
        set = &group->second;
      }
    }
  } else {
    return false;
  }
  if (set != nullptr && !set->empty()) *ids = set;
  return true;
}

bool AttributeIndex::Matches(const Filter& filter, uint64_t id) const {
  return MakeChecker(filter).Matches(id);
}

AttributeIndex::Checker AttributeIndex::MakeChecker(const Filter& filter) const {
  Checker checker;
  checker.live_ = &live_;
  auto resolve = [this](const Filter& f, auto& self) -> Checker::Node {
    Checker::Node node;
    node.filter = &f;
    if (f.op == Filter::Op::kEq || f.op == Filter::Op::kRange || f.op == Filter::Op::kHasTag) {
      node.set_leaf = LeafIds(f, &node.ids);
      if (node.set_leaf) return node;
      const auto it = column_of_.find(f.name);
      if (it != column_of_.end()) node.column = &columns_[it->second];
      return node;
    }
    for (const Filter& operand : f.operands) node.operands.push_back(self(operand, self));
    return node;
  };
  checker.root_ = resolve(filter, resolve);
  return checker;
}

// Leaf by leaf as Evaluate decides it, for one id.
bool AttributeIndex::Checker::Check(const Node& node, uint64_t id) const {
  switch (node.filter->op) {
    case Filter::Op::kEq:
    case Filter::Op::kRange:
    case Filter::Op::kHasTag:
      if (node.set_leaf) return node.ids != nullptr && node.ids->contains(id);
      return node.column != nullptr && MatchesNumber(*node.column, *node.filter, id);
    case Filter::Op::kNot:
      return live_->Test(id) && (node.operands.empty() || !Check(node.operands[0], id));
    case Filter::Op::kAnd:
      if (node.operands.empty()) return false;
      for (const Node& operand : node.operands) {
        if (!Check(operand, id)) return false;
      }
      return true;
    case Filter::Op::kOr:
      for (const Node& operand : node.operands) {
        if (Check(operand, id)) return true;
      }
      return false;
  }
  return false;
}

void AttributeIndex::Checker::KeepMatching(std::vector<uint64_t>* ids, size_t first) const {
  std::vector<uint64_t>& v = *ids;
  size_t kept = first;
  if (root_.set_leaf) {
    thread_local std::vector<uint8_t> found;
    found.assign(v.size() - first, 0);
    if (root_.ids != nullptr) root_.ids->ContainsEach(std::span(v).subspan(first), found.data());
    for (size_t i = first; i < v.size(); ++i) {
      if (found[i - first]) v[kept++] = v[i];
    }
  } else {
    constexpr size_t kAhead = 8;
    for (size_t i = first; i < v.size(); ++i) {
      if (i + kAhead < v.size()) Prefetch(v[i + kAhead]);
      if (Matches(v[i])) v[kept++] = v[i];
    }
  }
  v.resize(kept);
}

size_t AttributeIndex::Checker::CountLeaves(const Node& node, uint64_t id) const {
  if (node.operands.empty()) {
    const Filter::Op op = node.filter->op;
    const bool leaf =
        op == Filter::Op::kEq || op == Filter::Op::kRange || op == Filter::Op::kHasTag;
    return leaf && Check(node, id) ? 1 : 0;
  }
  size_t n = 0;
  for (const Node& operand : node.operands) n += CountLeaves(operand, id);
  return n;
}

void AttributeIndex::Checker::PrefetchNode(const Node& node, uint64_t id) const {
  if (node.ids != nullptr) node.ids->Prefetch(id);
  if (node.column != nullptr) {
    node.column->ints.Prefetch(id);
    node.column->doubles.Prefetch(id);
  }
  for (const Node& operand : node.operands) PrefetchNode(operand, id);
}

size_t AttributeIndex::MemoryBytes() const {
  size_t bytes = live_.bound() / 8 + entries_.MemoryBytes();
  entries_.ForEach([&](const auto& e) {
    bytes += (e.second.columns.capacity() + e.second.tags.capacity()) * sizeof(uint32_t);
  });
  for (const Column& c : columns_) {
    bytes += c.ints.MemoryBytes() + c.doubles.MemoryBytes() + c.strings.MemoryBytes();
    c.strings.ForEach([&](const auto& e) { bytes += e.second.capacity(); });
    // B-tree nodes: the entries and about a quarter more (nodes part full, their headers).
    bytes += (c.ints_by_value.size() * sizeof(std::pair<int64_t, uint64_t>) +
              c.doubles_by_value.size() * sizeof(std::pair<double, uint64_t>)) *
             5 / 4;
    bytes += c.ids_of_string.capacity() * (sizeof(decltype(c.ids_of_string)::value_type) + 1) +
             c.ids_true.MemoryBytes() + c.ids_false.MemoryBytes();
    for (const auto& [value, ids] : c.ids_of_string) bytes += value.capacity() + ids.MemoryBytes();
  }
  for (const auto& ids : tag_ids_) bytes += ids.MemoryBytes();
  return bytes;
}

}  // namespace shoal::db
