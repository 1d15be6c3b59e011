#!/usr/bin/python3
"""Draws recall@10 vs QPS of every system in a shoal_bench CSV, one curve per system, the way
ann-benchmarks draws them: each system's Pareto frontier (the points no other point of that
system beats on both recall and QPS), QPS on a log axis, higher and further right is better.

    python3 bench/plot_recall_qps.py ann.csv ann.png --title "fashion-mnist, 1 thread"

`shoal_bench ann --plot FILE.png` writes the run's rows to a CSV and runs this on it. Rows
without recall_at_10 (other subcommands' rows) are skipped. Needs Debian's python3-matplotlib.
"""

import argparse
import csv
import sys
from typing import Dict, List, Tuple

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

Point = Tuple[float, float]  # (recall, qps)


def read_points(path: str) -> Dict[str, List[Point]]:
    """{system: [(recall, qps), ...]} of the rows that carry a recall, in file order."""
    curves: Dict[str, List[Point]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if not row.get("recall_at_10") or not row.get("qps"):
                continue
            recall, qps = float(row["recall_at_10"]), float(row["qps"])
            if qps > 0:
                curves.setdefault(row["system"], []).append((recall, qps))
    return curves


def pareto_frontier(points: List[Point]) -> List[Point]:
    """The points not beaten on both axes, by increasing recall (ann-benchmarks' create_pointset)."""
    frontier: List[Point] = []
    best_qps = -1.0
    for recall, qps in sorted(points, key=lambda p: (-p[0], -p[1])):
        if qps > best_qps:
            frontier.append((recall, qps))
            best_qps = qps
    return frontier[::-1]


def plot(curves: Dict[str, List[Point]], out: str, title: str) -> None:
    """Writes the figure to `out` (format from its extension, e.g. .png)."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    markers = "osD^v<>ph*"
    for i, (system, points) in enumerate(sorted(curves.items())):
        frontier = pareto_frontier(points)
        ax.plot([p[0] for p in frontier], [p[1] for p in frontier], marker=markers[i % 10],
                markersize=4, linewidth=1.5, label=system)
    ax.set_yscale("log")
    ax.set_xlabel("Recall@10")
    ax.set_ylabel("Queries per second (1/s), log scale")
    ax.set_title(title)
    ax.grid(True, which="both", linestyle=":", linewidth=0.6)
    ax.legend(loc="lower left", fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="shoal_bench CSV (columns system, recall_at_10, qps, ...)")
    parser.add_argument("png", help="the figure to write")
    parser.add_argument("--title", default="Recall@10 vs QPS")
    args = parser.parse_args(argv)
    curves = read_points(args.csv)
    if not curves:
        print(f"plot_recall_qps: {args.csv}: no rows with recall_at_10 and qps", file=sys.stderr)
        return 1
    plot(curves, args.png, args.title)
    print(f"plot_recall_qps: wrote {args.png} ({', '.join(sorted(curves))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
