"""Errors raised by the Shoal client: one exception type per canonical gRPC code.

Every failed call raises a ShoalError (or a subclass named after the code) carrying the
server's gRPC status code and message, e.g.

    try:
        client.describe_collection("nope")
    except shoal.NotFoundError as e:
        print(e.code, e.details)   # StatusCode.NOT_FOUND  name: 'nope' not found
"""

import grpc


class ShoalError(Exception):
    """A failed call. `code` is a grpc.StatusCode, `details` the server's message."""

    def __init__(self, code, details, method=""):
        self.code = code
        self.details = details
        self.method = method
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{name}: {details}")


class InvalidArgumentError(ShoalError):
    pass


class NotFoundError(ShoalError):
    pass


class AlreadyExistsError(ShoalError):
    pass


class PermissionDeniedError(ShoalError):
    pass


class UnauthenticatedError(ShoalError):
    pass


class ResourceExhaustedError(ShoalError):
    pass


class FailedPreconditionError(ShoalError):
    pass


class UnavailableError(ShoalError):
    pass


class DeadlineExceededError(ShoalError):
    pass


class DataLossError(ShoalError):
    pass


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.DATA_LOSS: DataLossError,
}


def from_rpc_error(error, method=""):
    """The ShoalError for a grpc.RpcError."""
    code = error.code()
    return _BY_CODE.get(code, ShoalError)(code, error.details() or "", method)
