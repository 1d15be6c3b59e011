"""Shoal as an ann-benchmarks algorithm, on the embedded binding (shoal_embedded), no server.

Copy this folder to ann-benchmarks' ann_benchmarks/algorithms/shoal/ (config.yml beside it) in an
image where ``import shoal_embedded`` works (Shoal built; PYTHONPATH=build/python_embedded).
Outside ann-benchmarks the module imports on its own, with a stand-in for BaseANN
(bench/ann_benchmarks/shoal_ann_module_test.py drives it that way).

Constructor arguments, as config.yml passes them: ``Shoal(metric, params)`` with metric
"euclidean" (Shoal's l2) or "angular" (cosine) and params the SPANN spec keys
(index/spann/spann_options.h: centroid_ratio, replicas, posting_cap, quant, seed, ...); the index is
built from ``"spann:" + "k=v,..."`` in the order given. Query arguments:
``set_query_arguments(max_postings, pruning_ratio=0)``. ``SHOAL_ANN_DIR`` picks where the
database directory is made (default: the system's temporary directory); done() removes it.
"""

import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np

import shoal_embedded

try:  # inside ann-benchmarks: ann_benchmarks/algorithms/shoal/module.py
    from ..base.module import BaseANN
except ImportError:  # standalone: a stand-in with the same interface shape

    class BaseANN:  # type: ignore[no-redef]
        """Stand-in for ann_benchmarks.algorithms.base.module.BaseANN (same method names)."""

        name: str = "BaseANN"
        res: Any = None

        def done(self) -> None:
            """Releases what the algorithm holds."""

        def get_memory_usage(self) -> Optional[float]:
            """Resident memory of this process in KiB."""
            return None

        def batch_query(self, X: np.ndarray, n: int) -> None:
            """Answers every row of X; get_batch_results() returns the answers."""
            self.res = [self.query(q, n) for q in X]

        def get_batch_results(self) -> Any:
            """The answers of the last batch_query."""
            return self.res

        def get_additional(self) -> Dict[str, Any]:
            """Extra attributes stored with a run's results."""
            return {}

        def __str__(self) -> str:
            return self.name


_METRICS = {"euclidean": "l2", "angular": "cosine"}
_COLLECTION = "ann"
_UPSERT_BATCH = 50000  # under the library's default max_batch_records (100000)


def _resident_kib() -> Optional[float]:
    """This process's resident set in KiB (ann-benchmarks uses psutil; /proc needs nothing)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024.0


class Shoal(BaseANN):
    """Shoal's SSD-resident SPANN index through the embedded library."""

    def __init__(self, metric: str, params: Dict[str, Any]) -> None:
        if metric not in _METRICS:
            raise ValueError(f"metric: {metric!r} is not one of {sorted(_METRICS)}")
        self._metric = metric
        self._params = dict(params)
        keys = ",".join(f"{k}={v}" for k, v in self._params.items())
        self._spec = "spann" + (":" + keys if keys else "")
        self._max_postings = 0  # the index's default until set_query_arguments
        self._pruning_ratio = 0.0
        self._dir: Optional[str] = None
        self._db: Optional[shoal_embedded.Database] = None
        self.res: List[np.ndarray] = []
        self.name = f"Shoal({self._spec})"

    def fit(self, X: np.ndarray) -> None:
        """Writes X (row i gets key i) into a new database and builds the SPANN index."""
        self.done()
        X = np.ascontiguousarray(X, dtype=np.float32)
        self._dir = tempfile.mkdtemp(prefix="shoal-ann.", dir=os.environ.get("SHOAL_ANN_DIR"))
        # Online index updates are not needed: the index is built once over every vector.
        self._db = shoal_embedded.Database(self._dir, index_update_threads=0)
        self._db.create_collection(_COLLECTION, X.shape[1], _METRICS[self._metric])
        for start in range(0, len(X), _UPSERT_BATCH):
            stop = min(start + _UPSERT_BATCH, len(X))
            self._db.upsert(_COLLECTION, np.arange(start, stop, dtype=np.uint64), X[start:stop])
        self._db.build_index(_COLLECTION, self._spec)

    def set_query_arguments(self, max_postings: int, pruning_ratio: float = 0.0) -> None:
        """Postings scanned per query (more: higher recall, fewer QPS) and query-aware pruning
        (scan posting i only if its distance <= pruning_ratio * the nearest; 0 = off)."""
        self._max_postings = int(max_postings)
        self._pruning_ratio = float(pruning_ratio)
        self.name = (f"Shoal({self._spec}, max_postings={self._max_postings}, "
                     f"pruning_ratio={self._pruning_ratio:g})")

    def _database(self) -> shoal_embedded.Database:
        if self._db is None:
            raise RuntimeError("Shoal: fit() first")
        return self._db

    def query(self, v: np.ndarray, n: int) -> np.ndarray:
        """The row numbers of the n nearest training vectors to v, nearest first."""
        keys, _ = self._database().search(
            _COLLECTION, np.ascontiguousarray(v, dtype=np.float32), k=n,
            max_postings=self._max_postings, pruning_ratio=self._pruning_ratio)
        return keys.astype(np.int64)

    def batch_query(self, X: np.ndarray, n: int) -> None:
        """Answers every row of X in one call (the library spreads it over its search threads)."""
        keys, distances = self._database().search_batch(
            _COLLECTION, np.ascontiguousarray(X, dtype=np.float32), k=n,
            max_postings=self._max_postings, pruning_ratio=self._pruning_ratio)
        found = np.isfinite(distances)  # a row with fewer than n hits is padded with inf
        self.res = [row[mask].astype(np.int64) for row, mask in zip(keys, found)]

    def get_batch_results(self) -> List[np.ndarray]:
        """The answers of the last batch_query: one array of row numbers per query."""
        return self.res

    def get_memory_usage(self) -> Optional[float]:
        """Resident memory of this process in KiB, as ann-benchmarks measures it."""
        return _resident_kib()

    def get_additional(self) -> Dict[str, Any]:
        """The index's own RAM (centroids, navigator, caches) in bytes."""
        if self._db is None:
            return {}
        return {"index_ram_bytes": self._db.describe_collection(_COLLECTION).index_ram_bytes}

    def done(self) -> None:
        """Closes the database and removes its directory."""
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __str__(self) -> str:
        return self.name
