// Parameter sweeps as the `ann` bench's flags spell them.
//
//   ParseNumberList("10,20,40")                        -> {10, 20, 40}
//   ParseGrid("max_postings=4,8;pruning_ratio=0,1.5")  -> 4 points, the first key slowest:
//     {max_postings=4, pruning_ratio=0}, {4, 1.5}, {8, 0}, {8, 1.5}
//
// Thread safety: pure functions.
#ifndef SHOAL_BENCH_SWEEP_H_
#define SHOAL_BENCH_SWEEP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal::bench {

// One point of a grid: (key, value) in the order the keys were written.
using GridPoint = std::vector<std::pair<std::string, double>>;

// Comma-separated numbers; InvalidArgument naming `what` for an empty list or a bad number.
absl::StatusOr<std::vector<double>> ParseNumberList(const std::string& text,
                                                    const std::string& what);

// ';'-separated "key=list" axes; the cross product of the lists. InvalidArgument for a
// missing '=', an empty key, a repeated key or a bad list.
absl::StatusOr<std::vector<GridPoint>> ParseGrid(const std::string& text);

// "key=value;key=value" with values printed compactly (%g), for CSV params and output.
std::string GridPointString(const GridPoint& point);
// GridPointString of each point.
std::vector<std::string> GridPointStrings(const std::vector<GridPoint>& points);

}  // namespace shoal::bench

#endif  // SHOAL_BENCH_SWEEP_H_
