"""Exceptions of shoal_embedded: one class per absl canonical status code.

Every failure of the embedded library raises an ``Error`` (or a subclass) with ``code`` (the
canonical code's name, e.g. ``"INVALID_ARGUMENT"``) and ``message`` (the library's message, which
names the offending field, e.g. ``"records[3].vector: ..."``). The subclasses also derive from the
closest builtin exception, so ``except ValueError`` catches bad arguments.
"""

from typing import Dict, Type


class Error(Exception):
    """A failed call of the embedded library: ``code`` (absl code name) and ``message``."""

    code: str
    code_value: int
    message: str

    def __init__(self, code: str, message: str, code_value: int = 2) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.code_value = code_value
        self.message = message


class InvalidArgumentError(Error, ValueError):
    """INVALID_ARGUMENT: a bad name, dimension, vector, key, spec or k (the field is named)."""


class OutOfRangeError(Error, ValueError):
    """OUT_OF_RANGE: a value outside the range the library accepts."""


class NotFoundError(Error, LookupError):
    """NOT_FOUND: an unknown collection (or alias, tenant, snapshot)."""


class AlreadyExistsError(Error):
    """ALREADY_EXISTS: a collection or alias name already in use."""


class FailedPreconditionError(Error):
    """FAILED_PRECONDITION: the call does not fit the state (e.g. the database is closed)."""


class ResourceExhaustedError(Error):
    """RESOURCE_EXHAUSTED: a batch over a limit, a disk full, an index over its RAM bound."""


class UnavailableError(Error):
    """UNAVAILABLE: the directory is locked by another process, or the database is closing."""


class PermissionDeniedError(Error):
    """PERMISSION_DENIED: a tenant may not change a record it does not own."""


class DataLossError(Error):
    """DATA_LOSS: stored data failed a check (corruption)."""


class InternalError(Error):
    """INTERNAL (and any other code): an I/O or storage-engine failure."""


_BY_CODE: Dict[str, Type[Error]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "OUT_OF_RANGE": OutOfRangeError,
    "NOT_FOUND": NotFoundError,
    "ALREADY_EXISTS": AlreadyExistsError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "UNAVAILABLE": UnavailableError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "DATA_LOSS": DataLossError,
}


def error_for_status(code_value: int, code: str, message: str) -> Error:
    """The exception for an absl status (called by the C++ module; also usable in tests)."""
    return _BY_CODE.get(code, InternalError)(code, message, code_value)
