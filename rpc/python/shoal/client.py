"""Client: Shoal's Python SDK over gRPC, numpy arrays in and out.

    import numpy as np, shoal
    with shoal.Client("127.0.0.1:50051", api_key=None) as client:
        client.create_collection("docs", dimension=4, metric="l2")
        client.upsert("docs", keys=[1, 2], vectors=np.random.rand(2, 4))
        ids, distances = client.search("docs", np.random.rand(4), k=2)  # shape (2,) each
        ids, distances = client.search("docs", np.random.rand(3, 4), k=2)  # shape (3, 2)

Keys are ints (uint64) or strings. Search pads a query with fewer than k hits with id -1 (or
None for string keys) and distance +inf. Every failed call raises shoal.ShoalError (a subclass
per gRPC code, see shoal/errors.py). A Client may be shared by threads (gRPC channels are
thread-safe).
"""

import collections

import grpc
import numpy as np

from shoal import errors
from shoal.v1 import collection_service_pb2 as collection_pb2
from shoal.v1 import collection_service_pb2_grpc as collection_grpc
from shoal.v1 import search_service_pb2 as search_pb2
from shoal.v1 import search_service_pb2_grpc as search_grpc
from shoal.v1 import types_pb2
from shoal.v1 import vector_service_pb2 as vector_pb2
from shoal.v1 import vector_service_pb2_grpc as vector_grpc
from shoal._health import health_pb2, health_pb2_grpc
from shoal.filters import attribute_value

CollectionInfo = collections.namedtuple(
    "CollectionInfo", ["name", "dimension", "metric", "num_vectors", "index"])
Record = collections.namedtuple("Record", ["key", "vector", "attributes", "tags"])
SearchResult = collections.namedtuple("SearchResult", ["ids", "distances"])

_METRICS = {
    "l2": types_pb2.METRIC_L2, "euclidean": types_pb2.METRIC_L2,
    "ip": types_pb2.METRIC_INNER_PRODUCT, "inner_product": types_pb2.METRIC_INNER_PRODUCT,
    "cosine": types_pb2.METRIC_COSINE, "angular": types_pb2.METRIC_COSINE,
}
_METRIC_NAMES = {types_pb2.METRIC_L2: "l2", types_pb2.METRIC_INNER_PRODUCT: "ip",
                 types_pb2.METRIC_COSINE: "cosine"}


def metric_of(name):
    try:
        return _METRICS[name]
    except KeyError:
        raise ValueError(f"metric {name!r}: want one of l2, ip, cosine") from None


def key_of(key):
    """int / numpy integer -> numeric key; str -> string key."""
    if isinstance(key, (str,)):
        return types_pb2.Key(name=key)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and key >= 0:
        return types_pb2.Key(id=int(key))
    raise TypeError(f"key {key!r}: want an int >= 0 or a str")


def key_value(key):
    return key.id if key.WhichOneof("kind") == "id" else key.name


def collection_info(info):
    return CollectionInfo(info.spec.name, info.spec.dimension,
                          _METRIC_NAMES.get(info.spec.metric, "unspecified"),
                          info.num_vectors, info.index)


def as_matrix(vectors, what):
    """Any array-like -> a C-contiguous 2-D float32 array (a 1-D input is one row)."""
    m = np.ascontiguousarray(vectors, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"{what}: want shape (n, dimension), got {np.shape(vectors)}")
    return m


class Client:
    """A connection to shoald. See the module docstring."""

    def __init__(self, address="127.0.0.1:50051", api_key=None, *, tls=False,
                 root_certificates=None, private_key=None, certificate_chain=None,
                 server_name=None, timeout=30.0, max_message_bytes=64 << 20):
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
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request, timeout=None):
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            name = getattr(method, "_method", b"")
            raise errors.from_rpc_error(e, name.decode() if isinstance(name, bytes) else "") from None

    # ---- health ----
    def health(self, service=""):
        """"SERVING" / "NOT_SERVING" (grpc.health.v1)."""
        response = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # ---- collections ----
    def create_collection(self, name, dimension, metric="l2"):
        spec = types_pb2.CollectionSpec(name=name, dimension=dimension, metric=metric_of(metric))
        response = self._call(self._collections.CreateCollection,
                              collection_pb2.CreateCollectionRequest(spec=spec))
        return collection_info(response.collection)

    def list_collections(self):
        response = self._call(self._collections.ListCollections,
                              collection_pb2.ListCollectionsRequest())
        return [collection_info(c) for c in response.collections]

    def describe_collection(self, name):
        response = self._call(self._collections.DescribeCollection,
                              collection_pb2.DescribeCollectionRequest(name=name))
        return collection_info(response.collection)

    def drop_collection(self, name):
        self._call(self._collections.DropCollection,
                   collection_pb2.DropCollectionRequest(name=name))

    # ---- records ----
    def records(self, keys, vectors, attributes=None, tags=None):
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

    def upsert(self, collection, keys, vectors, attributes=None, tags=None, sync=False):
        """Inserts or replaces records, all or nothing; returns how many were written."""
        request = vector_pb2.UpsertRequest(collection=collection, sync=sync,
                                           records=self.records(keys, vectors, attributes, tags))
        return self._call(self._vectors.Upsert, request).upserted

    def get(self, collection, keys):
        """One entry per key: a Record (vector as a float32 array) or None."""
        request = vector_pb2.GetRequest(collection=collection, keys=[key_of(k) for k in keys])
        out = []
        for result in self._call(self._vectors.Get, request).results:
            if not result.found:
                out.append(None)
                continue
            r = result.record
            attributes = {name: getattr(v, v.WhichOneof("value"))
                          for name, v in r.attributes.items()}
            out.append(Record(key_value(r.key), np.array(r.vector, dtype=np.float32),
                              attributes, list(r.tags)))
        return out

    def delete(self, collection, keys, sync=False):
        """Deletes the keys that exist; returns how many did."""
        request = vector_pb2.DeleteRequest(collection=collection, sync=sync,
                                           keys=[key_of(k) for k in keys])
        return self._call(self._vectors.Delete, request).deleted

    # ---- search ----
    def search(self, collection, queries, k=10, filter=None, max_postings=0, pruning_ratio=0.0):
        """k nearest neighbours. `queries`: shape (dimension,) -> ids, distances of shape (k,);
        shape (n, dimension) -> shape (n, k). filter: a shoal.v1.Filter (see shoal.filters)."""
        single = np.ndim(queries) == 1
        q = as_matrix(queries, "queries")
        request = search_pb2.SearchRequest(collection=collection, k=k, dimension=q.shape[1],
                                           max_postings=max_postings, pruning_ratio=pruning_ratio)
        request.queries.extend(q.ravel().tolist())
        if filter is not None:
            request.filter.CopyFrom(filter)
        response = self._call(self._search.Search, request)
        return _result_arrays(response.results, k, single)


def _result_arrays(results, k, single):
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
