"""End-to-end test of the Python SDK's newer RPCs against a real shoald: aliases, Batch,
streaming Ingest, BatchSearch, BuildIndex with progress, Compact, snapshots, GetStats, and API
keys / roles / TLS as seen by a client. Run by ctest with /usr/bin/python3 and
PYTHONPATH=build/python."""

import os
import subprocess
import sys
import tempfile
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

ADMIN_KEY = "admin-key-0123456789"
WRITER_KEY = "writer-key-0123456789"
READER_KEY = "reader-key-0123456789"


class AdminRpcTest(unittest.TestCase):
    """Every newer RPC through the SDK, on a server with keys and a snapshot directory."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="shoal-py-admin-")
        key_file = os.path.join(cls.tmp.name, "keys")
        with open(key_file, "w") as f:
            f.write(f"admin {ADMIN_KEY} ops\nread-write {WRITER_KEY} app\n"
                    f"read-only {READER_KEY} dashboard\n")
        cls.snapshots = os.path.join(cls.tmp.name, "snapshots")
        os.mkdir(cls.snapshots)
        cls.server = Shoald(["--key-file", key_file, "--snapshot-dir", cls.snapshots])
        cls.client = shoal.Client(cls.server.address, api_key=ADMIN_KEY)
        rng = np.random.default_rng(11)
        cls.vectors = rng.standard_normal((3000, 16)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.__exit__(None, None, None)
        cls.tmp.cleanup()

    def test_keys_and_roles(self):
        self.client.create_collection("keyed", dimension=2)
        with shoal.Client(self.server.address) as anonymous:
            with self.assertRaises(shoal.UnauthenticatedError) as e:
                anonymous.list_collections()
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        with shoal.Client(self.server.address, api_key="wrong-key") as wrong:
            with self.assertRaises(shoal.UnauthenticatedError):
                wrong.describe_collection("keyed")
        with shoal.Client(self.server.address, api_key=READER_KEY) as reader:
            self.assertEqual(reader.describe_collection("keyed").num_vectors, 0)
            with self.assertRaises(shoal.PermissionDeniedError) as e:
                reader.upsert("keyed", [1], [[1, 2]])
            self.assertEqual(e.exception.code, grpc.StatusCode.PERMISSION_DENIED)
        with shoal.Client(self.server.address, api_key=WRITER_KEY) as writer:
            self.assertEqual(writer.upsert("keyed", [1], [[1, 2]]), 1)
            with self.assertRaises(shoal.PermissionDeniedError):
                writer.compact()

    def test_aliases(self):
        self.client.create_collection("al_v1", dimension=2)
        self.client.create_collection("al_v2", dimension=2)
        self.client.upsert("al_v2", [5], [[1, 1]])
        self.client.create_alias("al_live", "al_v1")
        self.assertEqual(self.client.describe_collection("al_live").name, "al_v1")
        self.assertEqual(self.client.describe_collection("al_v1").aliases, ["al_live"])
        self.client.alter_alias("al_live", "al_v2")
        self.assertEqual(self.client.list_aliases("al_v2"), {"al_live": "al_v2"})
        ids, _ = self.client.search("al_live", [1, 1], k=1)  # searches resolve aliases
        self.assertEqual(ids.tolist(), [5])
        self.client.drop_alias("al_live")
        self.assertEqual(self.client.list_aliases(), {})
        with self.assertRaises(shoal.NotFoundError):
            self.client.describe_collection("al_live")

    def test_batch_ingest_batch_search(self):
        self.client.create_collection("ing", dimension=16)
        result = self.client.ingest("ing", range(3000), self.vectors, batch_size=256)
        self.assertEqual(result.upserted, 3000)
        self.assertEqual(result.batches, 12)
        self.assertEqual(self.client.describe_collection("ing").num_vectors, 3000)
        counts = self.client.batch([("delete", "ing", [0, 1, 2]),
                                    ("upsert", "ing", [0], self.vectors[:1])])
        self.assertEqual(counts, [3, 1])
        self.assertEqual(self.client.describe_collection("ing").num_vectors, 2998)
        (ids_a, d_a), (ids_b, _) = self.client.batch_search(
            [{"collection": "ing", "queries": self.vectors[10], "k": 3},
             {"collection": "ing", "queries": self.vectors[20:23], "k": 2}])
        self.assertEqual(ids_a[0], 10)
        self.assertEqual(ids_b.shape, (3, 2))
        self.assertEqual(ids_b[:, 0].tolist(), [20, 21, 22])
        with self.assertRaises(shoal.InvalidArgumentError):
            self.client.ingest("ing", [1], np.zeros((1, 15)))

    def test_build_index_compact_stats(self):
        self.client.create_collection("idx", dimension=16)
        self.client.upsert("idx", range(3000), self.vectors)
        seen = []
        info = self.client.build_index("idx", "spann:centroid_ratio=0.02,replicas=2",
                                       progress=seen.append, progress_interval_ms=10)
        self.assertTrue(info.index.startswith("spann"), info)
        self.assertEqual(info.num_vectors, 3000)
        self.assertGreater(info.index_ram_bytes, 0)
        self.assertTrue(seen and seen[-1].done and seen[-1].phase == "PHASE_DONE", seen)
        ids, _ = self.client.search("idx", self.vectors[7], k=1, max_postings=64)
        self.assertEqual(ids.tolist(), [7])
        # Target recall travels to the server: calibrated at build time, checked there.
        ids, _ = self.client.search("idx", self.vectors[7], k=1, target_recall=0.99)
        self.assertEqual(ids.tolist(), [7])
        with self.assertRaisesRegex(shoal.InvalidArgumentError, "target_recall"):
            self.client.search("idx", self.vectors[7], k=1, target_recall=1.5)
        info = self.client.build_index("idx", "auto")  # 16-d: no quantizer, posting size measured
        self.assertIn("centroids=data", info.index)
        self.assertIn("quant=none", info.index)
        with self.assertRaises(shoal.InvalidArgumentError):
            self.client.build_index("idx", "spann:no_such_knob=1")
        self.assertGreaterEqual(self.client.compact("idx"), 0.0)
        stats = self.client.stats()
        self.assertGreaterEqual(stats["total_vectors"], 3000)
        self.assertIn("idx", [c.name for c in stats["collections"]])

    def test_snapshot_and_restore(self):
        self.client.create_collection("snap", dimension=2)
        self.client.upsert("snap", [1, 2], [[0, 0], [1, 1]])
        snapshot = self.client.snapshot("before")
        self.assertEqual(snapshot.name, "before")
        self.assertGreater(snapshot.bytes, 0)
        self.assertIn("before", [s.name for s in self.client.list_snapshots()])
        self.client.delete("snap", [1, 2])
        restored = self.client.restore("before")
        self.assertIn("snap", [c.name for c in restored])
        self.assertEqual(self.client.describe_collection("snap").num_vectors, 2)
        with self.assertRaises(shoal.ShoalError) as e:
            self.client.restore("../etc")
        self.assertIn(e.exception.code, (grpc.StatusCode.INVALID_ARGUMENT,
                                         grpc.StatusCode.NOT_FOUND))


class TlsTest(unittest.TestCase):
    def test_tls_with_the_servers_certificate(self):
        with tempfile.TemporaryDirectory(prefix="shoal-py-tls-") as tmp:
            cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                            "-keyout", key, "-out", cert, "-days", "1"],
                           check=True, capture_output=True)
            with Shoald(["--tls-cert", cert, "--tls-key", key]) as server:
                with open(cert, "rb") as f:
                    roots = f.read()
                with shoal.Client(server.address, root_certificates=roots,
                                  server_name="localhost") as client:
                    self.assertEqual(client.health(), "SERVING")
                    client.create_collection("tls", dimension=2)
                with shoal.Client(server.address, timeout=5) as plaintext:
                    with self.assertRaises(shoal.ShoalError):
                        plaintext.list_collections()


if __name__ == "__main__":
    unittest.main(verbosity=2)
