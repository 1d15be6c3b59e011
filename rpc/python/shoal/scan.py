"""Records by filter (VectorService Count, Scroll, DeleteByFilter): the calls Client inherits
from ScanCalls, and the types they return.

    from shoal.filters import eq, has_tag, range
    n = client.count("docs", filter=eq("lang", "en"))
    page = client.scroll("docs", filter=eq("lang", "en"), limit=100)   # one page
    while page.next_page_token:
        page = client.scroll("docs", filter=eq("lang", "en"), page_token=page.next_page_token)
    for record in client.scroll_all("docs", filter=has_tag("draft")):  # every page
        print(record.key, record.attributes)
    deleted = client.delete_by_filter("docs", filter=range("year", 0, 1999), sync=True)

Pages come in key order (int keys ascending, then str keys). The page token names the last key a
page examined, not an offset, so a scroll resumed after other writes goes on from there: a
record that exists from the first page to the last comes back exactly once. A page may hold
fewer than `limit` records (even none) while a token follows; scroll_all hides that.
delete_by_filter deletes in atomic batches of 1024; if it fails midway the batches before stay
deleted and the error says how many (calling it again finishes). With `tenant`, only records the
tenant sees are counted and returned, and only records it owns are deleted.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Union

import numpy as np

from shoal.v1 import types_pb2
from shoal.v1 import vector_service_pb2 as vector_pb2

Key = Union[int, str]
"""A record key: an int >= 0 (uint64 on the wire) or a str."""
AttributeValue = Union[bool, int, float, str]
"""An attribute's value."""


class Record(NamedTuple):
    """A stored record as get and scroll return it (vector as a float32 array; empty when a
    scroll left vectors out)."""
    key: Key
    vector: np.ndarray
    attributes: Dict[str, AttributeValue]
    tags: List[str]


class Hit(NamedTuple):
    """One hit of search(..., with_attributes=True or with_vectors=True)."""
    key: Key
    distance: float
    attributes: Dict[str, AttributeValue]
    tags: List[str]
    vector: np.ndarray  # empty unless with_vectors


class ScrollPage(NamedTuple):
    """One page of scroll: records in key order, and the token of the next page ("" = none)."""
    records: List[Record]
    next_page_token: str


def key_value(key: types_pb2.Key) -> Key:
    """shoal.v1.Key -> int or str."""
    return key.id if key.WhichOneof("kind") == "id" else key.name


def attributes_of(proto_map: Any) -> Dict[str, AttributeValue]:
    """A proto map<string, AttributeValue> -> a dict of Python values."""
    return {name: getattr(v, v.WhichOneof("value")) for name, v in proto_map.items()}


def record_of(r: types_pb2.Record) -> Record:
    """shoal.v1.Record -> Record."""
    return Record(key_value(r.key), np.array(r.vector, dtype=np.float32),
                  attributes_of(r.attributes), list(r.tags))


def hit_of(h: types_pb2.Hit) -> Hit:
    """shoal.v1.Hit -> Hit."""
    return Hit(key_value(h.key), float(h.distance), attributes_of(h.attributes), list(h.tags),
               np.array(h.vector, dtype=np.float32))


class ScanCalls:
    """Count, scroll and delete by filter (needs Client's _call and _vectors stub)."""

    _vectors: Any

    def _call(self, method: Any, request: Any, timeout: Any = None) -> Any:
        raise NotImplementedError  # Client's

    def count(self, collection: str, filter: Optional[types_pb2.Filter] = None,
              tenant: str = "") -> int:
        """How many records pass `filter` (a shoal.v1.Filter, see shoal.filters; None = every
        record); with `tenant`, of those it owns or was granted."""
        request = vector_pb2.CountRequest(collection=collection, tenant=tenant)
        if filter is not None:
            request.filter.CopyFrom(filter)
        return self._call(self._vectors.Count, request).count

    def scroll(self, collection: str, filter: Optional[types_pb2.Filter] = None,
               limit: int = 100, page_token: str = "", with_vectors: bool = False,
               with_attributes: bool = True, tenant: str = "") -> ScrollPage:
        """One page (at most `limit`, 1..10000) of the records that pass `filter`, in key order,
        from `page_token` ("" = the first page). Raises InvalidArgumentError naming `limit` or
        `page_token` when they are bad."""
        request = vector_pb2.ScrollRequest(collection=collection, limit=limit,
                                           page_token=page_token, with_vectors=with_vectors,
                                           with_attributes=with_attributes, tenant=tenant)
        if filter is not None:
            request.filter.CopyFrom(filter)
        response = self._call(self._vectors.Scroll, request)
        return ScrollPage([record_of(r) for r in response.records], response.next_page_token)

    def scroll_all(self, collection: str, filter: Optional[types_pb2.Filter] = None,
                   page_size: int = 1000, with_vectors: bool = False,
                   with_attributes: bool = True, tenant: str = "") -> Iterator[Record]:
        """Every record that passes `filter`, in key order, fetched page by page (one scroll
        call per `page_size` records; never the whole collection in memory)."""
        token = ""
        while True:
            page = self.scroll(collection, filter, page_size, token, with_vectors,
                               with_attributes, tenant)
            yield from page.records
            token = page.next_page_token
            if not token:
                return

    def delete_by_filter(self, collection: str, filter: Optional[types_pb2.Filter] = None,
                         all: bool = False, sync: bool = False, tenant: str = "") -> int:
        """Deletes the records that pass `filter` and returns how many. To delete every record
        pass all=True instead of a filter (the server refuses neither or both). With `tenant`,
        only records it owns."""
        request = vector_pb2.DeleteByFilterRequest(collection=collection, all=all, sync=sync,
                                                   tenant=tenant)
        if filter is not None:
            request.filter.CopyFrom(filter)
        return self._call(self._vectors.DeleteByFilter, request).deleted
