"""End-to-end test of the Python SDK (rpc/python) against a real shoald: every RPC, numpy in
and out, errors as exceptions carrying the gRPC code. Run by ctest with /usr/bin/python3 and
PYTHONPATH=build/python."""

import os
import sys
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoal import filters as f  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402


class PythonSdkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Shoald()
        cls.client = shoal.Client(cls.server.address, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.__exit__(None, None, None)

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")

    def test_collections(self):
        info = self.client.create_collection("py_coll", dimension=3, metric="cosine")
        self.assertEqual(info, shoal.CollectionInfo("py_coll", 3, "cosine", 0, "flat", [], 0, 0, 0, ""))
        self.assertIn("py_coll", [c.name for c in self.client.list_collections()])
        self.assertEqual(self.client.describe_collection("py_coll").dimension, 3)
        with self.assertRaises(shoal.AlreadyExistsError) as e:
            self.client.create_collection("py_coll", dimension=3)
        self.assertEqual(e.exception.code, grpc.StatusCode.ALREADY_EXISTS)
        self.client.drop_collection("py_coll")
        with self.assertRaises(shoal.NotFoundError) as e:
            self.client.describe_collection("py_coll")
        self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND)
        # The wording errors.py documents.
        self.assertEqual(e.exception.details, "name: 'py_coll' not found")
        with self.assertRaises(shoal.InvalidArgumentError):
            self.client.create_collection("bad name!", dimension=3)

    def test_upsert_get_delete_search(self):
        rng = np.random.default_rng(7)
        vectors = rng.standard_normal((50, 8)).astype(np.float32)
        self.client.create_collection("py_vec", dimension=8)
        attributes = [{"even": i % 2 == 0, "i": i, "name": f"r{i}"} for i in range(50)]
        tags = [["low"] if i < 10 else [] for i in range(50)]
        self.assertEqual(self.client.upsert("py_vec", range(50), vectors, attributes, tags,
                                            sync=True), 50)
        self.assertEqual(self.client.describe_collection("py_vec").num_vectors, 50)

        got = self.client.get("py_vec", [3, 99])
        self.assertIsNone(got[1])
        self.assertEqual(got[0].key, 3)
        np.testing.assert_array_equal(got[0].vector, vectors[3])
        self.assertEqual(got[0].attributes, {"even": False, "i": 3, "name": "r3"})
        self.assertEqual(got[0].tags, ["low"])

        # One query -> 1-D arrays; its own vector is the nearest (squared L2 = 0).
        ids, distances = self.client.search("py_vec", vectors[5], k=3)
        self.assertEqual(ids.shape, (3,))
        self.assertEqual(ids[0], 5)
        self.assertAlmostEqual(float(distances[0]), 0.0, places=4)
        self.assertTrue(np.all(np.diff(distances) >= 0))
        # A batch -> 2-D arrays that match brute force.
        ids, distances = self.client.search("py_vec", vectors[:4], k=5)
        self.assertEqual(ids.shape, (4, 5))
        expected = np.argsort(((vectors[:4, None, :] - vectors[None, :, :]) ** 2).sum(-1), axis=1)
        np.testing.assert_array_equal(ids, expected[:, :5])
        # Filters, and padding when fewer than k pass.
        ids, _ = self.client.search("py_vec", vectors[0], k=20,
                                    filter=f.all_of(f.has_tag("low"), f.eq("even", True)))
        self.assertEqual(sorted(ids[ids >= 0].tolist()), [0, 2, 4, 6, 8])
        self.assertTrue(np.all(ids[5:] == -1))
        ids, _ = self.client.search("py_vec", vectors[0], k=50,
                                    filter=f.negate(f.range("i", lo=5)))
        self.assertEqual(sorted(ids[ids >= 0].tolist()), [0, 1, 2, 3, 4])

        self.assertEqual(self.client.delete("py_vec", [0, 1, 1000], sync=True), 2)
        self.assertEqual(self.client.describe_collection("py_vec").num_vectors, 48)
        with self.assertRaises(shoal.InvalidArgumentError) as e:
            self.client.upsert("py_vec", [1], np.zeros((1, 7)))
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("records[0]", e.exception.details)
        with self.assertRaises(shoal.NotFoundError):
            self.client.search("nope", vectors[0], k=1)

    def test_search_session(self):
        rng = np.random.default_rng(11)
        vectors = rng.standard_normal((40, 6)).astype(np.float32)
        self.client.create_collection("py_session", dimension=6)
        self.client.upsert("py_session", range(40), vectors, sync=True)
        with self.client.search_session() as session:
            for i in range(10):
                ids, distances = session.search("py_session", vectors[i], k=1 + i % 5)
                expected = self.client.search("py_session", vectors[i], k=1 + i % 5)
                np.testing.assert_array_equal(ids, expected.ids)
                np.testing.assert_array_equal(distances, expected.distances)
            ids, _ = session.search("py_session", vectors[:3], k=2)
            self.assertEqual(ids.shape, (3, 2))
            hits = session.search("py_session", vectors[4], k=1, with_vectors=True)
            self.assertEqual(hits[0].key, 4)
            # A bad search raises what search() raises; the stream goes on.
            with self.assertRaises(shoal.InvalidArgumentError) as streamed:
                session.search("py_session", vectors[0], k=0)
            with self.assertRaises(shoal.InvalidArgumentError) as unary:
                self.client.search("py_session", vectors[0], k=0)
            self.assertEqual(streamed.exception.details, unary.exception.details)
            with self.assertRaises(shoal.NotFoundError):
                session.search("nope", vectors[0], k=1)
            self.assertEqual(session.search("py_session", vectors[7], k=1).ids[0], 7)
            # Cancelled between searches: the next one opens a new stream.
            session.cancel()
            self.assertEqual(session.search("py_session", vectors[8], k=1).ids[0], 8)

    def test_string_keys(self):
        self.client.create_collection("py_str", dimension=2)
        self.client.upsert("py_str", ["a", "b"], [[0, 0], [1, 1]])
        ids, distances = self.client.search("py_str", [0.9, 0.9], k=3)
        self.assertEqual(ids.tolist(), ["b", "a", None])
        self.assertEqual(distances[2], np.inf)


if __name__ == "__main__":
    unittest.main(verbosity=2)
