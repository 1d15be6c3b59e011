"""Client: Shoal's Python SDK over gRPC, numpy arrays in and out.

    import numpy as np, shoal
    with shoal.Client("127.0.0.1:50051", api_key=None) as client:
        client.create_collection("docs", dimension=4, metric="l2")
        client.upsert("docs", keys=[1, 2], vectors=np.random.rand(2, 4))
        ids, distances = client.search("docs", np.random.rand(4), k=2)  # shape (2,) each
        ids, distances = client.search("docs", np.random.rand(3, 4), k=2)  # shape (3, 2)

Tenants (shoal/tenants.py): upsert, get, delete, ingest, search and batch take `tenant`; the
TenantService calls (create_tenant, grant, list_tenants, ...) are methods of Client too.

Keys are ints (uint64) or strings. Search pads a query with fewer than k hits with id -1 (or
None for string keys) and distance +inf. Every failed call raises shoal.ShoalError (a subclass
per gRPC code, see shoal/errors.py). A Client may be shared by threads (gRPC channels are
thread-safe).
"""

from __future__ import annotations

import queue
import time
import warnings
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union)

import grpc
import numpy as np
import numpy.typing as npt

from shoal import errors
from shoal.cache import CacheMethods
from shoal.cluster import ClusterCalls
from shoal.v1 import admin_service_pb2 as admin_pb2
from shoal.v1 import admin_service_pb2_grpc as admin_grpc
from shoal.v1 import cache_service_pb2_grpc as cache_grpc
from shoal.v1 import collection_service_pb2 as collection_pb2
from shoal.v1 import collection_service_pb2_grpc as collection_grpc
from shoal.v1 import search_service_pb2 as search_pb2
from shoal.v1 import search_service_pb2_grpc as search_grpc
from shoal.v1 import tenant_service_pb2_grpc as tenant_grpc
from shoal.v1 import types_pb2
from shoal.v1 import vector_service_pb2 as vector_pb2
from shoal.v1 import vector_service_pb2_grpc as vector_grpc
from shoal._health import health_pb2, health_pb2_grpc
from shoal.filters import attribute_value
from shoal.scan import Hit, Record, ScanCalls, hit_of, record_of
from shoal.search_session import SearchSession
from shoal.tenants import TenantCalls

Key = Union[int, str]
"""A record key: an int >= 0 (uint64 on the wire) or a str."""
AttributeValue = Union[bool, int, float, str]
"""An attribute's value."""


class CollectionInfo(NamedTuple):
    """A collection as describe_collection / list_collections report it."""
    name: str
    dimension: int
    metric: str  # "l2", "ip" or "cosine"
    num_vectors: int
    index: str  # "flat" or the spec of the built index
    aliases: List[str]
    index_ram_bytes: int
    unindexed_vectors: int  # written since the last build_index
    vector_bytes: int
    damage: str = ""  # why a quarantined collection could not be opened; "" when it serves
    tenant_ram_bytes: int = 0  # of index_ram_bytes, what the tenants hold


class Snapshot(NamedTuple):
    """A snapshot in the server's --snapshot-dir."""
    name: str
    bytes: int
    files: int
    created_unix_seconds: int


class BuildProgress(NamedTuple):
    """One progress message of build_index (phase by name, e.g. "PHASE_CLUSTERING")."""
    phase: str
    fraction: float
    elapsed_seconds: float
    vectors: int
    done: bool
    step: str


class IngestResult(NamedTuple):
    """What ingest did: records upserted, batches sent, batches the server asked to resend."""
    upserted: int
    batches: int
    backoffs: int


class SearchResult(NamedTuple):
    """ids and distances of search: shape (k,) for one query, (n, k) for n queries."""
    ids: np.ndarray
    distances: np.ndarray

_METRICS = {
    "l2": types_pb2.METRIC_L2, "euclidean": types_pb2.METRIC_L2,
    "ip": types_pb2.METRIC_INNER_PRODUCT, "inner_product": types_pb2.METRIC_INNER_PRODUCT,
    "cosine": types_pb2.METRIC_COSINE, "angular": types_pb2.METRIC_COSINE,
}
_METRIC_NAMES = {types_pb2.METRIC_L2: "l2", types_pb2.METRIC_INNER_PRODUCT: "ip",
                 types_pb2.METRIC_COSINE: "cosine"}


def metric_of(name: str) -> int:
    """A metric name (l2/euclidean, ip/inner_product, cosine/angular) -> shoal.v1.Metric."""
    try:
        return _METRICS[name]
    except KeyError:
        raise ValueError(f"metric {name!r}: want one of l2, ip, cosine") from None


def key_of(key: Key) -> types_pb2.Key:
    """int / numpy integer -> numeric key; str -> string key (shoal.v1.Key)."""
    if isinstance(key, (str,)):
        return types_pb2.Key(name=key)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and key >= 0:
        return types_pb2.Key(id=int(key))
    raise TypeError(f"key {key!r}: want an int >= 0 or a str")


def key_value(key: types_pb2.Key) -> Key:
    """shoal.v1.Key -> int or str."""
    return key.id if key.WhichOneof("kind") == "id" else key.name


def collection_info(info: types_pb2.CollectionInfo) -> CollectionInfo:
    """shoal.v1.CollectionInfo -> CollectionInfo."""
    return CollectionInfo(info.spec.name, info.spec.dimension,
                          _METRIC_NAMES.get(info.spec.metric, "unspecified"),
                          info.num_vectors, info.index, list(info.aliases), info.index_ram_bytes,
                          info.unindexed_vectors, info.vector_bytes, info.damage,
                          info.tenant_ram_bytes)


def snapshot_info(s: admin_pb2.SnapshotInfo) -> Snapshot:
    """shoal.v1.SnapshotInfo -> Snapshot."""
    return Snapshot(s.name, s.bytes, s.files, s.created_unix_seconds)


def as_matrix(vectors: npt.ArrayLike, what: str) -> np.ndarray:
    """Any array-like -> a C-contiguous 2-D float32 array (a 1-D input is one row)."""
    m = np.ascontiguousarray(vectors, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"{what}: want shape (n, dimension), got {np.shape(vectors)}")
    return m



def _warn_about_filter(response: search_pb2.SearchResponse) -> None:
    """Passes the server's filter warnings (SearchResponse.warnings) on as FilterWarning."""
    for text in response.warnings:
        warnings.warn(text, errors.FilterWarning, stacklevel=3)

class Client(TenantCalls, CacheMethods, ScanCalls, ClusterCalls):
    """A connection to shoald: one method per RPC (see the module docstring). Thread-safe.

    `tenant` arguments: the tenant a call acts for ("" = none, or the API key's own tenant for
    a tenant-bound key). Only admin keys may name any tenant; a tenant-bound key naming another
    gets PermissionDeniedError."""

    def __init__(self, address: str = "127.0.0.1:50051", api_key: Optional[str] = None, *,
                 tls: bool = False, root_certificates: Optional[bytes] = None,
                 private_key: Optional[bytes] = None, certificate_chain: Optional[bytes] = None,
                 server_name: Optional[str] = None, timeout: float = 30.0,
                 max_message_bytes: int = 64 << 20) -> None:
        """api_key: sent as "authorization: Bearer <key>". TLS is on when `tls` or any PEM
        (bytes) is given; root_certificates None = the system roots. server_name overrides the
        name checked against the server certificate. timeout: seconds per call."""
        options = [("grpc.max_send_message_length", max_message_bytes),
                   ("grpc.max_receive_message_length", max_message_bytes)]
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        if tls or root_certificates or certificate_chain:
            credentials = grpc.ssl_channel_credentials(root_certificates, private_key,
                                                       certificate_chain)
            self._channel = grpc.secure_channel(address, credentials, options)
        else:
            self._channel = grpc.insecure_channel(address, options)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self.timeout = timeout
        self._collections = collection_grpc.CollectionServiceStub(self._channel)
        self._vectors = vector_grpc.VectorServiceStub(self._channel)
        self._search = search_grpc.SearchServiceStub(self._channel)
        self._admin = admin_grpc.AdminServiceStub(self._channel)
        self._caches = cache_grpc.CacheServiceStub(self._channel)
        self._tenants = tenant_grpc.TenantServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def close(self) -> None:
        """Closes the channel; calls after it fail."""
        self._channel.close()

    def __enter__(self) -> "Client":
        """`with Client(...) as client:` closes the channel at the end of the block."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Closes the channel."""
        self.close()

    def _call(self, method: Any, request: Any, timeout: Optional[float] = None) -> Any:
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e, _method_name(method)) from None

    # ---- health ----
    def health(self, service: str = "") -> str:
        """"SERVING" / "NOT_SERVING" (grpc.health.v1)."""
        response = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # ---- collections ----
    def create_collection(self, name: str, dimension: int, metric: str = "l2", shards: int = 0,
                          replication: int = 0) -> CollectionInfo:
        """Creates an empty collection (metric: l2, ip or cosine); returns it. shards and
        replication (cluster mode only, shoald --cluster-etcd): records spread over `shards`
        shards by key hash, each kept by `replication` nodes; 0 and 0 = not sharded."""
        spec = types_pb2.CollectionSpec(name=name, dimension=dimension, metric=metric_of(metric),
                                        shards=shards, replication=replication)
        response = self._call(self._collections.CreateCollection,
                              collection_pb2.CreateCollectionRequest(spec=spec))
        return collection_info(response.collection)

    def list_collections(self) -> List[CollectionInfo]:
        """Every collection."""
        response = self._call(self._collections.ListCollections,
                              collection_pb2.ListCollectionsRequest())
        return [collection_info(c) for c in response.collections]

    def describe_collection(self, name: str) -> CollectionInfo:
        """One collection (by name or alias); NotFoundError when there is none."""
        response = self._call(self._collections.DescribeCollection,
                              collection_pb2.DescribeCollectionRequest(name=name))
        return collection_info(response.collection)

    def drop_collection(self, name: str) -> None:
        """Deletes a collection and everything in it."""
        self._call(self._collections.DropCollection,
                   collection_pb2.DropCollectionRequest(name=name))

    # ---- aliases ----
    def create_alias(self, alias: str, collection: str) -> None:
        """Makes `alias` another name of `collection`."""
        self._call(self._collections.CreateAlias,
                   collection_pb2.CreateAliasRequest(alias=alias, collection=collection))

    def alter_alias(self, alias: str, collection: str) -> None:
        """Points an existing alias at another collection."""
        self._call(self._collections.AlterAlias,
                   collection_pb2.AlterAliasRequest(alias=alias, collection=collection))

    def drop_alias(self, alias: str) -> None:
        """Deletes an alias (not its collection)."""
        self._call(self._collections.DropAlias, collection_pb2.DropAliasRequest(alias=alias))

    def list_aliases(self, collection: str = "") -> Dict[str, str]:
        """{alias: collection}, of every alias or of one collection's."""
        response = self._call(self._collections.ListAliases,
                              collection_pb2.ListAliasesRequest(collection=collection))
        return {a.alias: a.collection for a in response.aliases}

    # ---- records ----
    def records(self, keys: Iterable[Key], vectors: npt.ArrayLike,
                attributes: Optional[Sequence[Optional[Mapping[str, AttributeValue]]]] = None,
                tags: Optional[Sequence[Optional[Sequence[str]]]] = None
                ) -> List[types_pb2.Record]:
        """shoal.v1.Record messages from parallel lists (attributes: dicts, tags: lists)."""
        m = as_matrix(vectors, "vectors")
        keys = list(keys)
        if len(keys) != m.shape[0]:
            raise ValueError(f"keys: {len(keys)} keys for {m.shape[0]} vectors")
        out = []
        for i, key in enumerate(keys):
            r = types_pb2.Record(key=key_of(key), vector=m[i].tolist())
            if attributes is not None and attributes[i]:
                for name, value in attributes[i].items():
                    r.attributes[name].CopyFrom(attribute_value(value))
            if tags is not None and tags[i]:
                r.tags.extend(tags[i])
            out.append(r)
        return out

    def upsert(self, collection: str, keys: Iterable[Key], vectors: npt.ArrayLike,
               attributes: Optional[Sequence[Optional[Mapping[str, AttributeValue]]]] = None,
               tags: Optional[Sequence[Optional[Sequence[str]]]] = None,
               sync: bool = False, tenant: str = "") -> int:
        """Inserts or replaces records, all or nothing; returns how many were written.
        tenant: the tenant that owns them ("" = none, or the key's own tenant)."""
        request = vector_pb2.UpsertRequest(collection=collection, sync=sync, tenant=tenant,
                                           records=self.records(keys, vectors, attributes, tags))
        return self._call(self._vectors.Upsert, request).upserted

    def get(self, collection: str, keys: Iterable[Key], tenant: str = "",
            read_your_writes: bool = False) -> List[Optional[Record]]:
        """One entry per key: a Record (vector as a float32 array) or None (also for a record
        `tenant` neither owns nor was granted). read_your_writes (cluster mode): the replica
        read first applies every write acknowledged before the call."""
        request = vector_pb2.GetRequest(collection=collection, keys=[key_of(k) for k in keys],
                                        tenant=tenant)
        request.consistency.read_your_writes = read_your_writes
        out = []
        for result in self._call(self._vectors.Get, request).results:
            if not result.found:
                out.append(None)
                continue
            out.append(record_of(result.record))
        return out

    def delete(self, collection: str, keys: Optional[Iterable[Key]] = None, sync: bool = False,
               tenant: str = "", filter: Optional[types_pb2.Filter] = None) -> int:
        """Deletes the keys that exist (with a tenant: that it sees; one it sees but does not
        own raises PermissionDeniedError); returns how many did. With `filter` instead of
        keys: the records that pass it (delete_by_filter)."""
        if (keys is None) == (filter is None):
            raise ValueError("delete: pass either keys or filter")
        if filter is not None:
            return self.delete_by_filter(collection, filter, sync=sync, tenant=tenant)
        request = vector_pb2.DeleteRequest(collection=collection, sync=sync, tenant=tenant,
                                           keys=[key_of(k) for k in keys])
        return self._call(self._vectors.Delete, request).deleted

    def batch(self, operations: Iterable[Tuple[Any, ...]], tenant: str = "") -> List[int]:
        """Several upserts and deletes in one round trip, applied in order, each all or nothing.
        operations: ("upsert", collection, keys, vectors[, attributes, tags]) or
        ("delete", collection, keys); every one acts for `tenant`. Returns one count per
        operation (upserted / deleted)."""
        request = vector_pb2.BatchRequest()
        for op in operations:
            o = request.operations.add()
            if op[0] == "upsert":
                o.upsert.collection = op[1]
                o.upsert.tenant = tenant
                o.upsert.records.extend(self.records(op[2], op[3], *op[4:]))
            elif op[0] == "delete":
                o.delete.collection = op[1]
                o.delete.tenant = tenant
                o.delete.keys.extend(key_of(k) for k in op[2])
            else:
                raise ValueError(f"operation {op[0]!r}: want 'upsert' or 'delete'")
        response = self._call(self._vectors.Batch, request)
        return [r.upsert.upserted if r.WhichOneof("result") == "upsert" else r.delete.deleted
                for r in response.results]

    def ingest(self, collection: str, keys: Iterable[Key], vectors: npt.ArrayLike,
               batch_size: int = 1000, sync: bool = False, tenant: str = "") -> IngestResult:
        """Bulk load over one streaming Ingest RPC: batches of batch_size records, each
        acknowledged before the next is sent; a batch the server asks to back off is resent
        after retry_after_ms. tenant: the tenant that owns the records. Returns
        IngestResult(upserted, batches, backoffs) only when every batch was acknowledged: a
        stream that ends before (even with OK) raises UnavailableError saying how many were."""
        m = as_matrix(vectors, "vectors")
        keys = list(keys)
        if len(keys) != m.shape[0]:
            raise ValueError(f"keys: {len(keys)} keys for {m.shape[0]} vectors")
        outbox = queue.Queue()

        def requests() -> Iterator[vector_pb2.IngestRequest]:
            while True:
                item = outbox.get()
                if item is None:
                    return
                yield item

        # The end marker lets the server tell a complete stream from one cut short by a
        # message it could not parse (see Ingest in vector_service.proto).
        metadata = [*self._metadata, ("shoal-ingest-end-marker", "1")]
        stream = self._vectors.Ingest(requests(), timeout=None, metadata=metadata)
        upserted = batches = backoffs = 0
        total = (len(keys) + batch_size - 1) // batch_size
        try:
            for sequence, first in enumerate(range(0, len(keys), batch_size)):
                request = vector_pb2.IngestRequest(
                    collection=collection, sequence=sequence, sync=sync, tenant=tenant,
                    records=self.records(keys[first:first + batch_size],
                                         m[first:first + batch_size]))
                while True:
                    outbox.put(request)
                    answer = next(stream, None)
                    if answer is None or answer.sequence != sequence:
                        raise self._ingest_cut_short(answer, sequence, total, upserted)
                    if answer.retry_after_ms == 0:
                        break
                    backoffs += 1
                    time.sleep(answer.retry_after_ms / 1000)
                upserted += answer.upserted
                batches += 1
            outbox.put(vector_pb2.IngestRequest(end_of_stream=True))
            outbox.put(None)
            for _ in stream:  # the server's OK
                pass
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e, "/shoal.v1.VectorService/Ingest") from None
        finally:
            outbox.put(None)  # ends the request generator if we stopped early
        return IngestResult(upserted, batches, backoffs)

    @staticmethod
    def _ingest_cut_short(answer: Optional[vector_pb2.IngestResponse], sequence: int,
                          total: int, upserted: int) -> errors.ShoalError:
        """The error for an Ingest stream whose answers stopped (the server ended it, even with
        OK) or came out of order before every batch was acknowledged: never a result."""
        method = "/shoal.v1.VectorService/Ingest"
        done = f"{sequence} of {total} batches ({upserted} records) were acknowledged"
        if answer is None:
            return errors.UnavailableError(
                grpc.StatusCode.UNAVAILABLE,
                f"the stream ended early: {done}; batch {sequence} and later were not applied",
                method)
        return errors.ShoalError(
            grpc.StatusCode.INTERNAL,
            f"sequence: answer for batch {answer.sequence}, expected {sequence}; {done}", method)

    # ---- search ----
    def search(self, collection: str, queries: npt.ArrayLike, k: int = 10,
               filter: Optional[types_pb2.Filter] = None, max_postings: int = 0,
               pruning_ratio: float = 0.0, tenant: str = "", with_attributes: bool = False,
               with_vectors: bool = False, target_recall: float = 0.0
               ) -> Union[SearchResult, List[Hit], List[List[Hit]]]:
        """k nearest neighbours. `queries`: shape (dimension,) -> ids, distances of shape (k,);
        shape (n, dimension) -> shape (n, k). filter: a shoal.v1.Filter (see shoal.filters).
        tenant: only records it owns or was granted are searched. target_recall (0..1): scan
        what reached this recall@10 at build time (0 = the index's default, 0.95);
        max_postings (experts) overrides it.
        with_attributes / with_vectors: instead of arrays, a list of Hit (key, distance,
        attributes, tags, vector) per query, closest first (one list for a single query) --
        no get() needed to show what was found."""
        single = np.ndim(queries) == 1
        request = self._search_request(collection, queries, k, filter, max_postings,
                                       pruning_ratio, tenant, target_recall)
        request.with_attributes = with_attributes
        request.with_vectors = with_vectors
        response = self._call(self._search.Search, request)
        _warn_about_filter(response)
        if with_attributes or with_vectors:
            hits = [[hit_of(h) for h in r.hits] for r in response.results]
            return hits[0] if single else hits
        return _result_arrays(response.results, k, single)

    def search_session(self) -> "SearchSession":
        """A SearchSession (shoal/search_session.py): search() over one SearchStream, for a
        thread that sends many small searches. One per thread."""
        return SearchSession(self)

    def batch_search(self, searches: Iterable[Mapping[str, Any]],
                     tenant: str = "") -> List[SearchResult]:
        """Several searches in one round trip. searches: dicts of search()'s arguments
        (collection, queries, k, filter, tenant, ...); `tenant` applies to those that name
        none. Returns a list of (ids, distances)."""
        request = search_pb2.BatchSearchRequest(tenant=tenant)
        shapes = []
        for s in searches:
            s = dict(s)
            single = np.ndim(s["queries"]) == 1
            request.searches.append(self._search_request(**s))
            shapes.append((s.get("k", 10), single))
        response = self._call(self._search.BatchSearch, request)
        for r in response.responses:
            _warn_about_filter(r)
        return [_result_arrays(r.results, k, single)
                for r, (k, single) in zip(response.responses, shapes)]

    def _search_request(self, collection: str, queries: npt.ArrayLike, k: int = 10,
                        filter: Optional[types_pb2.Filter] = None, max_postings: int = 0,
                        pruning_ratio: float = 0.0, tenant: str = "",
                        target_recall: float = 0.0) -> search_pb2.SearchRequest:
        q = as_matrix(queries, "queries")
        request = search_pb2.SearchRequest(collection=collection, k=k, dimension=q.shape[1],
                                           max_postings=max_postings, pruning_ratio=pruning_ratio,
                                           tenant=tenant, target_recall=target_recall)
        request.queries.extend(q.ravel().tolist())
        if filter is not None:
            request.filter.CopyFrom(filter)
        return request

    # ---- admin ----
    def build_index(self, collection: str, spec: str,
                    progress: Optional[Callable[[BuildProgress], None]] = None,
                    progress_interval_ms: int = 1000,
                    timeout: float = 24 * 3600) -> CollectionInfo:
        """Builds (or rebuilds, or with spec "flat" drops) the index; blocks until done and
        returns the collection's CollectionInfo. progress: called with each BuildProgress."""
        request = admin_pb2.BuildIndexRequest(collection=collection, spec=spec,
                                              progress_interval_ms=progress_interval_ms)
        last = None
        try:
            for message in self._admin.BuildIndex(request, timeout=timeout,
                                                  metadata=self._metadata):
                last = message
                if progress is not None:
                    progress(BuildProgress(admin_pb2.BuildIndexProgress.Phase.Name(message.phase),
                                           message.fraction, message.elapsed_seconds,
                                           message.vectors, message.done, message.step))
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e, "/shoal.v1.AdminService/BuildIndex") from None
        if last is None or not last.done:
            raise errors.ShoalError(grpc.StatusCode.UNAVAILABLE, "build stream ended early",
                                    "/shoal.v1.AdminService/BuildIndex")
        return collection_info(last.collection)

    def compact(self, collection: str = "", timeout: float = 24 * 3600) -> float:
        """Compacts one collection's storage (or all); returns the seconds it took."""
        return self._call(self._admin.Compact, admin_pb2.CompactRequest(collection=collection),
                          timeout).seconds

    def snapshot(self, name: str, timeout: float = 3600) -> Snapshot:
        """Writes a consistent snapshot of the whole database to the server's --snapshot-dir."""
        return snapshot_info(self._call(self._admin.Snapshot, admin_pb2.SnapshotRequest(name=name),
                                        timeout).snapshot)

    def list_snapshots(self) -> List[Snapshot]:
        """The snapshots in the server's --snapshot-dir."""
        response = self._call(self._admin.ListSnapshots, admin_pb2.ListSnapshotsRequest())
        return [snapshot_info(s) for s in response.snapshots]

    def restore(self, name: str, timeout: float = 3600) -> List[CollectionInfo]:
        """Replaces the whole database with snapshot `name`; returns its collections."""
        response = self._call(self._admin.Restore, admin_pb2.RestoreRequest(name=name), timeout)
        return [collection_info(c) for c in response.collections]

    def stats(self) -> Dict[str, Any]:
        """The GetStatsResponse as a dict (collections as CollectionInfo)."""
        r = self._call(self._admin.GetStats, admin_pb2.GetStatsRequest())
        return {"collections": [collection_info(c) for c in r.collections],
                "total_vectors": r.total_vectors, "total_vector_bytes": r.total_vector_bytes,
                "uptime_seconds": r.uptime_seconds, "builds_in_progress": r.builds_in_progress,
                "ingest_inflight_bytes": r.ingest_inflight_bytes,
                "ingest_inflight_budget_bytes": r.ingest_inflight_budget_bytes,
                "version": r.version}


def _method_name(method: Any) -> str:
    name = getattr(method, "_method", b"")
    return name.decode() if isinstance(name, bytes) else str(name or "")


def _result_arrays(results: Any, k: int, single: bool) -> SearchResult:
    n = len(results)
    string_keys = any(h.key.WhichOneof("kind") == "name" for r in results for h in r.hits)
    ids = np.full((n, k), None if string_keys else -1, dtype=object if string_keys else np.int64)
    distances = np.full((n, k), np.inf, dtype=np.float32)
    for i, result in enumerate(results):
        for j, hit in enumerate(result.hits):
            ids[i, j] = key_value(hit.key)
            distances[i, j] = hit.distance
    if single:
        return SearchResult(ids[0], distances[0])
    return SearchResult(ids, distances)
