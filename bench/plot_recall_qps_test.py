"""Test of bench/plot_recall_qps.py on a tiny hand-written CSV: it writes a PNG, skips rows
without a recall, keeps only each system's Pareto frontier, and fails on a CSV with nothing to
plot; then `shoal_bench ann --plot` on a tiny synthetic set (SHOAL_BENCH: the binary). Run by
ctest with /usr/bin/python3 (python3-matplotlib)."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "plot_recall_qps.py")
sys.path.insert(0, HERE)
import plot_recall_qps  # noqa: E402

HEADER = ("system,params,threads,recall_at_10,qps,p50_us,p99_us,index_ram_bytes,build_seconds,"
          "bytes_read_per_query,full_vector_reads_per_query\n")
ROWS = [
    "shoal,max_postings=4,1,0.80,9000,100,200,1e6,3,4096,",
    "shoal,max_postings=8,1,0.93,6000,150,300,1e6,3,8192,",
    "shoal,max_postings=16,1,0.99,3000,300,600,1e6,3,16384,",
    "hnswlib,ef=10,1,0.85,12000,80,150,2e6,10,,",
    "hnswlib,ef=20,1,0.84,8000,90,160,2e6,10,,",  # beaten by ef=10: not on the frontier
    "hnswlib,ef=80,1,0.98,4000,250,400,2e6,10,,",
    "faiss-flat,k=10,1,,500,,,,,,",  # no recall (a `flat` row): skipped
]


class PlotRecallQpsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="shoal-plot-")
        self.addCleanup(self.dir.cleanup)

    def write_csv(self, rows):
        path = os.path.join(self.dir.name, "run.csv")
        with open(path, "w") as f:
            f.write(HEADER + "".join(r + "\n" for r in rows))
        return path

    def test_writes_png(self):
        png = os.path.join(self.dir.name, "out.png")
        run = subprocess.run([sys.executable, SCRIPT, self.write_csv(ROWS), png, "--title", "t"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("hnswlib, shoal", run.stdout)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(png), 5000)

    def test_reads_only_rows_with_recall(self):
        curves = plot_recall_qps.read_points(self.write_csv(ROWS))
        self.assertEqual(sorted(curves), ["hnswlib", "shoal"])
        self.assertEqual(len(curves["shoal"]), 3)

    def test_keeps_pareto_frontier(self):
        frontier = plot_recall_qps.pareto_frontier(
            [(0.85, 12000), (0.84, 8000), (0.98, 4000)])
        self.assertEqual(frontier, [(0.85, 12000), (0.98, 4000)])

    def test_nothing_to_plot_fails(self):
        png = os.path.join(self.dir.name, "none.png")
        run = subprocess.run([sys.executable, SCRIPT, self.write_csv(ROWS[-1:]), png],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)
        self.assertIn("no rows with recall_at_10", run.stderr)
        self.assertFalse(os.path.exists(png))

    @unittest.skipUnless(os.environ.get("SHOAL_BENCH"), "SHOAL_BENCH (shoal_bench) not set")
    def test_shoal_bench_ann_plot(self):
        png = os.path.join(self.dir.name, "ann.png")
        run = subprocess.run(
            [os.environ["SHOAL_BENCH"], "ann", "--dataset",
             "synthetic:n=2000,d=8,q=50,clusters=10,seed=1", "--systems",
             "faiss-ivf-flat,hnswlib", "--faiss-nlist", "16", "--faiss-nprobe", "1,4,16",
             "--hnsw-ef", "10,40", "--cache-dir", self.dir.name, "--plot", png],
            capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn(f"plot_recall_qps: wrote {png} (faiss-ivf-flat, hnswlib)", run.stdout)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
