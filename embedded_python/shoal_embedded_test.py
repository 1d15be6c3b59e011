#!/usr/bin/env python3
"""shoal_embedded (the embedded library as a Python module) through its Python surface.

Run by ctest with PYTHONPATH=build/python_embedded and Debian's /usr/bin/python3. Every check
compares against numpy brute force or against what was written; nothing is timed.
"""

import inspect
import os
import tempfile
import threading
import unittest

import numpy as np

import shoal_embedded
from shoal_embedded import Database

SEED = int(os.environ.get("SHOAL_TEST_SEED", "20261125"))
print(f"shoal_embedded_test: seed {SEED}")


def brute_force(data, queries, k, metric):
    """Exact top-k keys (row numbers) of each query, as the library's distances order them."""
    if metric == "l2":
        d = ((queries[:, None, :] - data[None, :, :]) ** 2).sum(-1)
    elif metric == "ip":
        d = -queries @ data.T
    else:
        qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        xn = data / np.linalg.norm(data, axis=1, keepdims=True)
        d = 1 - qn @ xn.T
    return np.argsort(d, axis=1, kind="stable")[:, :k], np.sort(d, axis=1)[:, :k]


class EmbeddedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="shoal_embedded_test.")
        self.path = os.path.join(self.tmp.name, "db")
        self.rng = np.random.default_rng(SEED)

    def tearDown(self):
        self.tmp.cleanup()

    def open(self, **kwargs):
        return Database(self.path, search_threads=1, build_threads=2, **kwargs)

    def test_collections_create_list_describe_drop(self):
        with self.open() as db:
            db.create_collection("a", 8, "l2")
            db.create_collection("b", 3, "angular")
            self.assertEqual([c.name for c in db.list_collections()], ["a", "b"])
            info = db.describe_collection("b")
            self.assertEqual((info.dimension, info.metric, info.num_vectors), (3, "cosine", 0))
            self.assertEqual(info.index, "flat")
            db.drop_collection("a")
            self.assertEqual([c.name for c in db.list_collections()], ["b"])
            with self.assertRaises(shoal_embedded.NotFoundError) as e:
                db.describe_collection("a")
            self.assertEqual(e.exception.code, "NOT_FOUND")
            with self.assertRaises(shoal_embedded.AlreadyExistsError):
                db.create_collection("b", 3)

    def test_exact_search_matches_brute_force_for_every_metric(self):
        data = self.rng.standard_normal((500, 16)).astype(np.float32)
        queries = self.rng.standard_normal((20, 16)).astype(np.float32)
        with self.open() as db:
            for metric in ("l2", "ip", "cosine"):
                db.create_collection(metric, 16, metric)
                self.assertEqual(db.upsert(metric, np.arange(500, dtype=np.uint64), data), 500)
                keys, dist = db.search_batch(metric, queries, k=10)
                self.assertEqual(keys.dtype, np.uint64)
                self.assertEqual(keys.shape, (20, 10))
                self.assertEqual(dist.dtype, np.float32)
                want_keys, want_dist = brute_force(data, queries, 10, metric)
                np.testing.assert_allclose(dist, want_dist, rtol=1e-4, atol=1e-4)
                # Same sets (ties may order differently): compare the k-th distances too.
                overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(keys, want_keys)])
                self.assertGreaterEqual(overlap, 0.99, metric)
                one_keys, one_dist = db.search(metric, queries[3], k=10)
                np.testing.assert_array_equal(one_keys, keys[3])
                np.testing.assert_array_equal(one_dist, dist[3])

    def test_spann_index_recall_and_batch_equals_single(self):
        data = self.rng.standard_normal((3000, 24)).astype(np.float32)
        queries = self.rng.standard_normal((50, 24)).astype(np.float32)
        with self.open() as db:
            db.create_collection("c", 24, "l2")
            db.upsert("c", np.arange(3000, dtype=np.int64), data)
            db.build_index("c", "spann:centroid_ratio=0.02,replicas=4,seed=7")
            self.assertTrue(db.describe_collection("c").index.startswith("spann"))
            keys, _ = db.search_batch("c", queries, k=10, max_postings=32)
            want, _ = brute_force(data, queries, 10, "l2")
            recall = np.mean([len(set(a.tolist()) & set(b.tolist())) / 10
                              for a, b in zip(keys, want)])
            print(f"spann recall@10 over 3000x24: {recall:.3f}")
            self.assertGreater(recall, 0.8)
            for i in range(0, 50, 7):
                k1, d1 = db.search("c", queries[i], k=10, max_postings=32)
                np.testing.assert_array_equal(k1, keys[i])
            # Writes after the build reach the postings: drained (lazy GC), then flushed.
            extra = self.rng.standard_normal((100, 24)).astype(np.float32)
            db.upsert("c", np.arange(3000, 3100, dtype=np.int64), extra)
            db.drain_index_updates("c")
            self.assertEqual(db.search("c", extra[5], k=1, max_postings=32)[0][0], 3005)
            db.delete("c", [3005])
            db.flush_index_updates("c")
            self.assertNotIn(3005, db.search("c", extra[5], k=10, max_postings=32)[0].tolist())
            with self.assertRaises(shoal_embedded.InvalidArgumentError) as e:
                db.build_index("c", "spann:replicas=0")
            self.assertIn("replicas", e.exception.message)

    def test_get_delete_attributes_tags_and_string_keys(self):
        with self.open() as db:
            db.create_collection("r", 3)
            vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
            db.upsert("r", ["x", "y", 7], vectors,
                      attributes=[{"lang": "en", "n": 3, "p": 2.5, "ok": True}, None, {}],
                      tags=[["red"], None, ["a", "b"]], sync=True)
            x, missing, seven = db.get("r", ["x", "nope", 7])
            self.assertIsNone(missing)
            self.assertEqual(x.key, "x")
            np.testing.assert_array_equal(x.vector, vectors[0])
            self.assertEqual(x.attributes, {"lang": "en", "n": 3, "p": 2.5, "ok": True})
            self.assertIs(type(x.attributes["ok"]), bool)
            self.assertIs(type(x.attributes["n"]), int)
            self.assertEqual(x.tags, ["red"])
            self.assertEqual((seven.key, seven.tags), (7, ["a", "b"]))
            self.assertEqual(db.get("r", [np.uint64(7)])[0].key, 7)  # numpy scalar keys
            keys, dist = db.search_batch("r", vectors[:1], k=5)
            self.assertEqual(keys.dtype, object)  # string keys among the hits
            self.assertEqual(list(keys[0][:3]), ["x", "y", 7] if dist[0][1] <= dist[0][2]
                             else ["x", 7, "y"])
            self.assertEqual((keys[0][3], keys[0][4]), (None, None))  # padding: 3 records
            self.assertTrue(np.isinf(dist[0][3:]).all())
            self.assertEqual(db.delete("r", ["x", "nope"]), 1)
            self.assertIsNone(db.get("r", ["x"])[0])
            self.assertEqual(db.describe_collection("r").num_vectors, 2)

    def test_filtered_search_matches_brute_force_over_the_passing_records(self):
        f = shoal_embedded.filters
        data = self.rng.standard_normal((1000, 8)).astype(np.float32)
        queries = self.rng.standard_normal((10, 8)).astype(np.float32)
        year = np.arange(1000) % 50 + 1980
        attributes = [{"year": int(y), "lang": "en" if i % 3 else "de"}
                      for i, y in enumerate(year)]
        tags = [["odd"] if i % 2 else [] for i in range(1000)]
        with self.open() as db:
            db.create_collection("f", 8)
            db.upsert("f", np.arange(1000, dtype=np.uint64), data, attributes=attributes,
                      tags=tags)
            cases = [
                (f.eq("lang", "de"), np.arange(1000) % 3 == 0),
                (f.range("year", lo=2020), year >= 2020),
                (f.all_of(f.range("year", 1990, 1999), f.not_(f.has_tag("odd"))),
                 (year >= 1990) & (year <= 1999) & (np.arange(1000) % 2 == 0)),
                (f.any_of(f.has_tag("odd"), f.eq("lang", "de")),
                 (np.arange(1000) % 2 == 1) | (np.arange(1000) % 3 == 0)),
                (f.eq("lang", "fr"), np.zeros(1000, bool)),
            ]
            for index in ("flat", "spann:centroid_ratio=0.05,seed=3"):
                db.build_index("f", index)
                for flt, passing in cases:
                    keys, dist = db.search_batch("f", queries, k=5, filter=flt,
                                                 max_postings=1000)
                    ids = np.flatnonzero(passing)
                    for q in range(len(queries)):
                        found = keys[q][np.isfinite(dist[q])]
                        self.assertTrue(set(found.tolist()) <= set(ids.tolist()))
                        if len(ids):
                            want, _ = brute_force(data[ids], queries[q:q + 1], 5, "l2")
                            self.assertEqual(sorted(found.tolist()), sorted(ids[want[0]].tolist()))
                        else:
                            self.assertEqual(len(found), 0)
                    one, _ = db.search("f", queries[0], k=5, filter=flt, max_postings=1000)
                    self.assertEqual(one.tolist(), keys[0][np.isfinite(dist[0])].tolist())
            with self.assertRaises(shoal_embedded.InvalidArgumentError) as e:
                db.search("f", queries[0], filter=f.all_of())
            self.assertIn("filter", e.exception.message)
            with self.assertRaises(shoal_embedded.InvalidArgumentError) as e:
                db.search("f", queries[0], filter=f.range("year", 5, 1))
            self.assertIn("filter", e.exception.message)

    def test_bad_input_raises_with_code_and_field(self):
        with self.open() as db:
            db.create_collection("e", 4)
            cases = [
                (lambda: db.upsert("e", [1, 2], np.zeros((3, 4), np.float32)), "vectors"),
                (lambda: db.upsert("e", [-1], np.zeros((1, 4), np.float32)), "keys[0]"),
                (lambda: db.upsert("e", np.array([5, -2]), np.zeros((2, 4))), "keys[1]"),
                (lambda: db.upsert("e", [1.5], np.zeros((1, 4), np.float32)), "keys[0]"),
                (lambda: db.upsert("e", [3, True], np.zeros((2, 4), np.float32)), "keys[1]"),
                (lambda: db.upsert("e", [2**64], np.zeros((1, 4), np.float32)), "keys[0]"),
                (lambda: db.upsert("e", 5, np.zeros((1, 4), np.float32)), "keys"),
                (lambda: db.upsert("e", [1], np.zeros((1, 5), np.float32)), "dimension"),
                (lambda: db.upsert("e", [1], np.full((1, 4), np.nan, np.float32)), "vector"),
                (lambda: db.upsert("e", [1], np.zeros((1, 4)), attributes=[{"a": [1]}]),
                 "attributes[0][a]"),
                (lambda: db.search("e", np.zeros((2, 4), np.float32)), "query"),
                (lambda: db.search_batch("e", np.zeros(4, np.float32)), "queries"),
                (lambda: db.search("e", np.zeros(4, np.float32), k=0), "k"),
                (lambda: db.create_collection("bad name", 4), "name"),
                (lambda: db.create_collection("m", 4, "manhattan"), "metric"),
            ]
            for call, field in cases:
                with self.assertRaises(shoal_embedded.InvalidArgumentError) as e:
                    call()
                self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
                self.assertIn(field, e.exception.message)
                self.assertIsInstance(e.exception, ValueError)
            self.assertEqual(db.describe_collection("e").num_vectors, 0)  # nothing written
            with self.assertRaises(shoal_embedded.NotFoundError):
                db.search("nope", np.zeros(4, np.float32))

    def test_close_context_manager_and_directory_lock(self):
        db = self.open()
        db.create_collection("c", 2)
        db.upsert("c", [1], np.ones((1, 2), np.float32))
        with self.assertRaises(shoal_embedded.UnavailableError) as e:
            Database(self.path)  # the directory is held by `db`
        self.assertEqual(e.exception.code, "UNAVAILABLE")
        db.close()
        self.assertTrue(db.closed)
        db.close()  # idempotent
        with self.assertRaises(shoal_embedded.FailedPreconditionError):
            db.list_collections()
        with Database(self.path, create_if_missing=False) as again:
            self.assertEqual(again.describe_collection("c").num_vectors, 1)
        self.assertTrue(again.closed)
        with self.assertRaises(shoal_embedded.Error):
            Database(os.path.join(self.tmp.name, "absent"), create_if_missing=False)

    def test_threads_search_concurrently_with_writes(self):
        data = self.rng.standard_normal((2000, 8)).astype(np.float32)
        with self.open() as db:
            db.create_collection("t", 8)
            db.upsert("t", np.arange(2000, dtype=np.uint64), data)
            errors = []

            def searcher():
                try:
                    for _ in range(20):
                        keys, _ = db.search_batch("t", data[:16], k=1)
                        if not (keys[:, 0] == np.arange(16)).all():
                            errors.append("self is not the nearest")
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(repr(e))

            def writer():
                for i in range(20):
                    db.upsert("t", [10000 + i], data[100:101] + 100)

            threads = [threading.Thread(target=searcher) for _ in range(3)]
            threads.append(threading.Thread(target=writer))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(db.describe_collection("t").num_vectors, 2020)

    def test_every_public_name_has_a_docstring_and_type_hints(self):
        for name in shoal_embedded.__all__:
            obj = getattr(shoal_embedded, name)
            self.assertTrue(inspect.getdoc(obj), name)
        for name, member in vars(Database).items():
            if not name.startswith("_"):
                self.assertTrue(inspect.getdoc(member), f"Database.{name}")
        for name in shoal_embedded.filters.__all__:
            function = getattr(shoal_embedded.filters, name)
            self.assertTrue(inspect.getdoc(function), f"filters.{name}")
            if inspect.isfunction(function):
                hints = function.__annotations__
                self.assertIn("return", hints, f"filters.{name}")
        stub = os.path.join(os.path.dirname(shoal_embedded.__file__), "_core.pyi")
        with open(stub) as f:
            text = f.read()
        for name, member in vars(Database).items():
            if not name.startswith("_"):
                self.assertIn(f"def {name}(", text, f"Database.{name} has no type hints")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(stub), "py.typed")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
