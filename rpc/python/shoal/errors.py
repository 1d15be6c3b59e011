"""Errors raised by the Shoal client: one exception type per canonical gRPC code.

Every failed call raises a ShoalError (or a subclass named after the code) carrying the
server's gRPC status code and message, e.g.

    try:
        client.describe_collection("nope")
    except shoal.NotFoundError as e:
        print(e.code, e.details)   # StatusCode.NOT_FOUND  name: 'nope' not found
"""

from __future__ import annotations

from typing import Union

import grpc


class ShoalError(Exception):
    """A failed call. `code` is a grpc.StatusCode, `details` the server's message."""

    def __init__(self, code: Union[grpc.StatusCode, str], details: str, method: str = "") -> None:
        """code: the gRPC status code; details: the server's message; method: the RPC's path."""
        self.code = code
        self.details = details
        self.method = method
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{name}: {details}")


class InvalidArgumentError(ShoalError):
    """INVALID_ARGUMENT: a malformed request (the message names the field)."""


class NotFoundError(ShoalError):
    """NOT_FOUND: no such collection, alias or snapshot."""


class AlreadyExistsError(ShoalError):
    """ALREADY_EXISTS: a collection or alias of that name exists."""


class PermissionDeniedError(ShoalError):
    """PERMISSION_DENIED: the API key's role may not make this call."""


class UnauthenticatedError(ShoalError):
    """UNAUTHENTICATED: the API key is missing or wrong."""


class ResourceExhaustedError(ShoalError):
    """RESOURCE_EXHAUSTED: a limit (message size, rate limit, ingest budget)."""


class FailedPreconditionError(ShoalError):
    """FAILED_PRECONDITION: the call does not fit the current state."""


class UnavailableError(ShoalError):
    """UNAVAILABLE: the server cannot be reached or is shutting down."""


class DeadlineExceededError(ShoalError):
    """DEADLINE_EXCEEDED: the call ran past its timeout."""


class DataLossError(ShoalError):
    """DATA_LOSS: the server found corrupted data."""


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


def from_rpc_error(error: grpc.RpcError, method: str = "") -> ShoalError:
    """The ShoalError for a grpc.RpcError."""
    code = error.code()
    return _BY_CODE.get(code, ShoalError)(code, error.details() or "", method)


_CODE_OF_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def from_code(number: int, details: str, method: str = "") -> ShoalError:
    """The ShoalError for a status carried in a message (a gRPC code's number and its details),
    e.g. a SearchStreamResponse's."""
    code = _CODE_OF_NUMBER.get(number, grpc.StatusCode.UNKNOWN)
    return _BY_CODE.get(code, ShoalError)(code, details, method)


class FilterWarning(UserWarning):
    """Issued (warnings.warn) when the server says a search filter may not do what was meant:
    an attribute or tag no record has, or a value of a type the attribute never holds. Such a
    comparison matches nothing; collections are schemaless, so it is not an error."""
