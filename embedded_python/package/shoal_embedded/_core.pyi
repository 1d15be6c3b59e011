"""Type hints of shoal_embedded._core (the pybind11 module built from embedded_python/*.cc)."""

from types import TracebackType
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type, Union

import numpy as np
import numpy.typing as npt

Key = Union[int, str]
Keys = Union[npt.NDArray[np.integer], Sequence[Key]]
AttributeValue = Union[bool, int, float, str]

class CollectionInfo:
    """What Database.describe_collection reports about one collection."""

    @property
    def name(self) -> str: ...
    @property
    def dimension(self) -> int: ...
    @property
    def metric(self) -> str: ...
    @property
    def num_vectors(self) -> int: ...
    @property
    def index(self) -> str: ...
    @property
    def index_ram_bytes(self) -> int: ...
    @property
    def unindexed_vectors(self) -> int: ...
    @property
    def aliases(self) -> List[str]: ...
    @property
    def damage(self) -> str: ...

class Filter:
    """A search filter over attributes and tags (build with shoal_embedded.filters)."""

def _filter_eq(name: str, value: AttributeValue) -> Filter: ...
def _filter_range(name: str, lo: Optional[float] = None, hi: Optional[float] = None) -> Filter: ...
def _filter_has_tag(tag: str) -> Filter: ...
def _filter_all_of(operands: List[Filter]) -> Filter: ...
def _filter_any_of(operands: List[Filter]) -> Filter: ...
def _filter_not(operand: Filter) -> Filter: ...

class Record:
    """A record read back by Database.get."""

    @property
    def key(self) -> Key: ...
    @property
    def vector(self) -> npt.NDArray[np.float32]: ...
    @property
    def attributes(self) -> Dict[str, AttributeValue]: ...
    @property
    def tags(self) -> List[str]: ...

class Database:
    """A Shoal database directory opened in this process (no server)."""

    def __init__(
        self,
        path: str,
        *,
        create_if_missing: bool = True,
        error_if_exists: bool = False,
        search_threads: int = 0,
        build_threads: int = 0,
        index_update_threads: int = 1,
        max_batch_records: int = 100000,
        block_cache_bytes: int = 268435456,
        posting_cache_bytes: int = 268435456,
        index_ram_bytes_limit: int = 0,
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Database": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def create_collection(self, name: str, dimension: int, metric: str = "l2") -> None: ...
    def drop_collection(self, name: str) -> None: ...
    def list_collections(self) -> List[CollectionInfo]: ...
    def describe_collection(self, name: str) -> CollectionInfo: ...
    def upsert(
        self,
        collection: str,
        keys: Keys,
        vectors: npt.ArrayLike,
        *,
        attributes: Optional[Sequence[Optional[Dict[str, AttributeValue]]]] = None,
        tags: Optional[Sequence[Optional[Sequence[str]]]] = None,
        sync: bool = False,
    ) -> int: ...
    def build_index(self, collection: str, spec: str = "spann") -> None: ...
    def flush_index_updates(self, collection: str) -> None: ...
    def drain_index_updates(self, collection: str) -> None: ...
    def search(
        self,
        collection: str,
        query: npt.ArrayLike,
        k: int = 10,
        *,
        max_postings: int = 0,
        pruning_ratio: float = 0.0,
        filter: Optional[Filter] = None,
    ) -> Tuple[npt.NDArray[Any], npt.NDArray[np.float32]]: ...
    def search_batch(
        self,
        collection: str,
        queries: npt.ArrayLike,
        k: int = 10,
        *,
        max_postings: int = 0,
        pruning_ratio: float = 0.0,
        filter: Optional[Filter] = None,
    ) -> Tuple[npt.NDArray[Any], npt.NDArray[np.float32]]: ...
    def get(self, collection: str, keys: Keys) -> List[Optional[Record]]: ...
    def delete(self, collection: str, keys: Keys, *, sync: bool = False) -> int: ...
