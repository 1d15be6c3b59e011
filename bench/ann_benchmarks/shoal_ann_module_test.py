#!/usr/bin/env python3
"""bench/ann_benchmarks/shoal (module.py + config.yml) through ann-benchmarks' interface shape.

What ann-benchmarks does with an algorithm, done here without it: read config.yml, expand each
run group's args and query_args into constructor calls and set_query_arguments calls, then
fit(X), query(v, n) one query at a time and batch_query(X, n) + get_batch_results(). Checks,
for euclidean and angular, on 2,000 x 32 random vectors and (when Debian's
dataset-fashion-mnist is installed) 5,000 Fashion-MNIST images: recall@10 against numpy brute
force above a floor at the largest max_postings, batch answers equal to single ones, no
duplicate or out-of-range ids. Needs PYTHONPATH=build/python_embedded and python3-yaml.
"""

import gzip
import importlib.util
import itertools
import os
import sys
import unittest

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "shoal", "config.yml")
MODULE = os.path.join(HERE, "shoal", "module.py")
FASHION = "/usr/share/datasets/fashion-mnist"
SEED = int(os.environ.get("SHOAL_TEST_SEED", "19"))
RECALL_FLOOR = 0.9  # at each run group's largest max_postings
K = 10
print(f"shoal_ann_module_test: seed {SEED}")


def load_module():
    spec = importlib.util.spec_from_file_location("shoal_ann_module", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expand(args):
    """One value per key (or position) for every combination, as ann-benchmarks expands them."""
    if isinstance(args, dict):
        choices = [[(k, x) for x in (v if isinstance(v, list) else [v])] for k, v in args.items()]
        return [dict(c) for c in itertools.product(*choices)]
    return [list(c) for c in itertools.product(*[a if isinstance(a, list) else [a] for a in args])]


def brute_force(X, Q, k, metric):
    if metric == "angular":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        d = -Q @ X.T
    else:
        d = (Q * Q).sum(1)[:, None] - 2 * Q @ X.T + (X * X).sum(1)[None, :]
    return np.argsort(d, axis=1, kind="stable")[:, :k]


def read_idx_images(path, count):
    with gzip.open(path, "rb") as f:
        header = np.frombuffer(f.read(16), dtype=">u4")
        rows, cols = int(header[2]), int(header[3])
        data = np.frombuffer(f.read(count * rows * cols), dtype=np.uint8)
    return data.reshape(count, rows * cols).astype(np.float32)


def datasets():
    rng = np.random.default_rng(SEED)
    out = [("random-2000x32", rng.standard_normal((2000, 32)).astype(np.float32),
            rng.standard_normal((100, 32)).astype(np.float32))]
    if os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        out.append(("fashion-mnist-5000",
                    read_idx_images(os.path.join(FASHION, "train-images-idx3-ubyte.gz"), 5000),
                    read_idx_images(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"), 100)))
    else:
        print(f"shoal_ann_module_test: {FASHION} absent, random vectors only")
    return out


class AnnModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(CONFIG) as f:
            cls.config = yaml.safe_load(f)
        cls.module = load_module()

    def definitions(self, metric):
        return self.config["float"][metric]

    def test_config_has_ann_benchmarks_layout(self):
        for metric in ("euclidean", "angular"):
            for algo in self.definitions(metric):
                for key in ("docker_tag", "module", "constructor", "base_args", "run_groups"):
                    self.assertIn(key, algo, f"{metric}: {key}")
                self.assertEqual(algo["module"], "ann_benchmarks.algorithms.shoal")
                self.assertEqual(algo["base_args"], ["@metric"])
                self.assertTrue(hasattr(self.module, algo["constructor"]))
                for name, group in algo["run_groups"].items():
                    self.assertIsInstance(group["args"], dict, name)
                    self.assertTrue(expand(group["query_args"]), name)

    def test_interface_shape(self):
        cls = self.module.Shoal
        for method in ("fit", "set_query_arguments", "query", "batch_query",
                       "get_batch_results", "get_memory_usage", "done", "__str__"):
            self.assertTrue(callable(getattr(cls, method, None)), method)
        with self.assertRaises(ValueError):
            cls("hamming", {})

    def run_definition(self, metric, params, query_args, X, Q, label):
        want = brute_force(X, Q, K, metric)
        algo = self.module.Shoal(metric, params)
        try:
            algo.fit(X)
            memory = algo.get_memory_usage()
            self.assertTrue(memory is None or memory > 0)
            recalls = []
            for qa in query_args:
                algo.set_query_arguments(*qa)
                self.assertIn(f"max_postings={qa[0]}", str(algo))
                single = [algo.query(q, K) for q in Q]
                algo.batch_query(Q, K)
                batch = algo.get_batch_results()
                self.assertEqual(len(batch), len(Q))
                for s, b in zip(single, batch):
                    np.testing.assert_array_equal(s, b, f"{label} {qa}: batch != single")
                    self.assertEqual(len(set(b.tolist())), len(b), "duplicate ids")
                    self.assertTrue(((b >= 0) & (b < len(X))).all())
                recall = np.mean([len(set(s.tolist()) & set(w.tolist())) / K
                                  for s, w in zip(single, want)])
                recalls.append((qa, recall))
            print(f"{label} {metric} {algo._spec}: " +
                  " ".join(f"{qa[0]}/{qa[1]}={r:.3f}" for qa, r in recalls), flush=True)
            best_postings = max(qa[0] for qa, _ in recalls)
            for qa, recall in recalls:
                if qa[0] == best_postings:
                    self.assertGreater(recall, RECALL_FLOOR, f"{label} {metric} {params} {qa}")
        finally:
            algo.done()

    def test_recall_and_batch_equals_single_for_both_metrics(self):
        for label, X, Q in datasets():
            for metric in ("euclidean", "angular"):
                for algo in self.definitions(metric):
                    for name, group in algo["run_groups"].items():
                        params = expand(group["args"])[0]  # one build per run group
                        with self.subTest(data=label, metric=metric, group=name):
                            self.run_definition(metric, params, expand(group["query_args"]),
                                                X, Q, label)


if __name__ == "__main__":
    unittest.main(verbosity=2)
