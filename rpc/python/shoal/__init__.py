"""Shoal's Python SDK: a gRPC client of shoald with numpy arrays in and out.

    import shoal
    client = shoal.Client("127.0.0.1:50051", api_key=os.environ.get("SHOAL_API_KEY"))
    ids, distances = client.search("docs", query, k=10)

The wire stubs (shoal.v1.*_pb2) are generated at build time from proto/shoal/v1 into
build/python/; put that directory on PYTHONPATH. Needs Debian's python3-grpcio,
python3-protobuf and python3-numpy.
"""

from shoal.client import (  # noqa: F401
    BuildProgress, Client, CollectionInfo, IngestResult, Record, SearchResult, Snapshot)
from shoal.errors import (  # noqa: F401
    AlreadyExistsError, DataLossError, DeadlineExceededError, FailedPreconditionError,
    InvalidArgumentError, NotFoundError, PermissionDeniedError, ResourceExhaustedError,
    ShoalError, UnauthenticatedError, UnavailableError)
from shoal import filters  # noqa: F401
