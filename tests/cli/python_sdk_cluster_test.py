"""End-to-end test of the Python SDK's cluster calls (cluster, move_shard) against real shoald
nodes in cluster mode (etcd + nats-server on loopback; skipped when they are not installed),
and what a single node answers to them. Run by ctest with /usr/bin/python3 and
PYTHONPATH=build/python."""

import os
import sys
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoald_cluster_fixture import ShoaldCluster  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

DIM = 8


class ClusterCallsTest(unittest.TestCase):
    """Three nodes; "docs" has 4 shards, replication 1 (n1 keeps shards 0 and 3)."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = ShoaldCluster(nodes=3)
        if cls.cluster.missing:
            cls.cluster.__exit__()
            raise unittest.SkipTest(cls.cluster.missing)
        cls.clients = [shoal.Client(a, timeout=30) for a in cls.cluster.addresses]

    @classmethod
    def tearDownClass(cls):
        for c in cls.clients:
            c.close()
        cls.cluster.__exit__()

    def docs_map(self, client):
        return next(c for c in client.cluster().collections if c.name == "docs")

    def wait_for_map(self, client, done, what):
        for _ in range(150):
            view = self.docs_map(client)
            if done(view):
                return view
            time.sleep(0.2)
        self.fail(f"{what}: the map is still {self.docs_map(client)}")

    def test_cluster_view_and_an_operators_move(self):
        client = self.clients[2]
        for attempt in range(100):  # the nodes may still be registering, the coordinator unelected
            try:
                client.create_collection("docs", dimension=DIM, shards=4, replication=1)
                break
            except (shoal.UnavailableError, shoal.FailedPreconditionError):
                if attempt == 99:
                    raise
                time.sleep(0.1)
        view = client.cluster()
        self.assertTrue(view.cluster_mode)
        self.assertEqual(view.node_id, "n3")
        self.assertEqual(sorted(n.id for n in view.nodes), ["n1", "n2", "n3"])
        self.assertIn(view.coordinator, ["n1", "n2", "n3"])
        self.assertEqual([n.coordinator for n in view.nodes],
                         [n.id == view.coordinator for n in view.nodes])
        before = self.wait_for_map(client, lambda m: len(m.replicas) == 4, "the map's shards")
        self.assertEqual((before.shards, before.replication), (4, 1))
        self.assertEqual(before.replicas[3], ["n1"])
        rng = np.random.default_rng(5)
        vectors = rng.standard_normal((200, DIM)).astype(np.float32)
        self.clients[0].upsert("docs", keys=list(range(200)), vectors=vectors)

        with self.assertRaises(shoal.InvalidArgumentError):
            client.move_shard("docs", 9, "n1", "n2")  # no shard 9
        with self.assertRaises(shoal.InvalidArgumentError):
            client.move_shard("docs", 3, "n3", "n2")  # n3 does not keep shard 3
        with self.assertRaises(shoal.InvalidArgumentError):
            client.move_shard("docs", 3, "n1", "n9")  # no node n9
        with self.assertRaises(shoal.NotFoundError):
            client.move_shard("nope", 0, "n1", "n2")
        with self.assertRaises(TypeError):
            client.move_shard("docs", -1, "n1", "n2")

        version = client.move_shard("docs", 3, "n1", "n2")
        self.assertEqual(version, before.version + 1)
        after = self.wait_for_map(
            client, lambda m: m.replicas[3] == ["n2"] and m.version > version, "the move")
        self.assertEqual(after.replicas[0], before.replicas[0])
        # Every record reads back through every node, shard 3's from its new copy on n2.
        for c in self.clients:
            got = c.get("docs", list(range(200)), read_your_writes=True)
            self.assertTrue(all(r is not None for r in got))
            np.testing.assert_array_equal(np.stack([r.vector for r in got]), vectors)


class SingleNodeTest(unittest.TestCase):
    def test_a_single_node_has_no_cluster(self):
        with Shoald() as server, shoal.Client(server.address) as client:
            view = client.cluster()
            self.assertFalse(view.cluster_mode)
            self.assertEqual(view.collections, [])
            with self.assertRaises(shoal.FailedPreconditionError):
                client.move_shard("docs", 0, "n1", "n2")


if __name__ == "__main__":
    unittest.main()
