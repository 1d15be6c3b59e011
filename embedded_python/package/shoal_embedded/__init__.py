"""Shoal's embedded vector database for Python: the library opened on a directory, no server.

    import numpy as np
    import shoal_embedded

    with shoal_embedded.Database("/tmp/shoal-demo") as db:
        db.create_collection("docs", 4, "l2")
        db.upsert("docs", np.arange(3, dtype=np.uint64), np.eye(3, 4, dtype=np.float32))
        db.build_index("docs", "spann:centroid_ratio=0.5")
        keys, distances = db.search("docs", np.array([1, 0, 0, 0], np.float32), k=2)

For a Shoal *server* (shoald) use the gRPC SDK, package ``shoal``, instead.
"""

from shoal_embedded import filters
from shoal_embedded._core import CollectionInfo, Database, Filter, Record
from shoal_embedded._errors import (
    AlreadyExistsError,
    DataLossError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnavailableError,
)

__all__ = [
    "AlreadyExistsError",
    "CollectionInfo",
    "DataLossError",
    "Database",
    "Error",
    "FailedPreconditionError",
    "Filter",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "OutOfRangeError",
    "PermissionDeniedError",
    "Record",
    "ResourceExhaustedError",
    "UnavailableError",
    "filters",
]
