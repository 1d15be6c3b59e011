"""Cluster mode (shoald --cluster-etcd): the AdminService calls Client inherits from
ClusterCalls.

    view = client.cluster()                     # the answering node's view of the cluster
    print(view.coordinator, [n.id for n in view.nodes])
    for c in view.collections:
        print(c.name, c.version, c.replicas)    # {shard: [node ids, preferred reader first]}
    version = client.move_shard("docs", shard=0, from_node="n1", to_node="n3")

A move runs in the background: the target copies the shard and catches up with its stream
while reads skip it, then the source leaves the shard (the map's version rises again). Writes
and reads go on throughout. Needs an admin key.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple

from shoal.v1 import admin_service_pb2 as admin_pb2


class ClusterNode(NamedTuple):
    """A live node: its id, the HOST:PORT other nodes reach it at, whether it coordinates."""
    id: str
    address: str
    coordinator: bool


class ClusterCollection(NamedTuple):
    """A sharded collection's shard map as one node sees it."""
    name: str
    version: int  # raised by every change of the map
    shards: int
    replication: int
    stream_replicas: int  # copies JetStream keeps of each shard's stream
    replicas: Dict[int, List[str]]  # shard -> node ids keeping it, the preferred reader first


class ClusterView(NamedTuple):
    """GetCluster: the answering node's view (cluster_mode False on a single node)."""
    cluster_mode: bool
    node_id: str
    coordinator: str  # "" while none is elected
    nodes: List[ClusterNode]
    collections: List[ClusterCollection]
    etcd_reachable: bool


class ClusterCalls:
    """The cluster calls of Client (needs Client's _call and _admin stub)."""

    _admin: Any

    def _call(self, method: Any, request: Any, timeout: Any = None) -> Any:
        raise NotImplementedError  # Client's

    def cluster(self) -> ClusterView:
        """The answering node's view: live nodes, coordinator, every sharded collection's map."""
        r = self._call(self._admin.GetCluster, admin_pb2.GetClusterRequest())
        nodes = [ClusterNode(n.id, n.address, n.coordinator) for n in r.nodes]
        collections = [
            ClusterCollection(c.name, c.version, c.shards, c.replication, c.stream_replicas,
                              {s.shard: list(s.nodes) for s in c.replicas})
            for c in r.collections]
        return ClusterView(r.cluster_mode, r.node_id, r.coordinator, nodes, collections,
                           r.etcd_reachable)

    def move_shard(self, collection: str, shard: int, from_node: str, to_node: str) -> int:
        """Moves one replica of `shard` of `collection` (its name, not an alias) from node
        `from_node` to node `to_node`; returns the shard map's version with the move in it.
        FailedPreconditionError while another move of the collection runs or on a single
        node; InvalidArgumentError (naming the field) for a shard out of range, a from_node
        that does not keep the shard, a to_node that is not live or already keeps it."""
        if isinstance(shard, bool) or not isinstance(shard, int) or shard < 0:
            raise TypeError(f"shard {shard!r}: want an int >= 0")
        request = admin_pb2.MoveShardRequest(collection=collection, shard=shard,
                                             **{"from": from_node, "to": to_node})
        return self._call(self._admin.MoveShard, request).version
