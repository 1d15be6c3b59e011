"""SearchSession: searches sent one after another over one SearchService.SearchStream.

    with client.search_session() as session:
        for query in queries:
            ids, distances = session.search("docs", query, k=10)

For a thread that sends many small searches (one query each): each costs a message each way on
an open stream instead of a call's setup. session.search takes Client.search's arguments and
returns what it returns; a bad search raises the same ShoalError (code and details) and the
stream goes on. The stream opens on the first search, with the Client's API key; the Client's
timeout bounds each search (checked by a watchdog thread of the session's, at least every
second): a search past it raises DeadlineExceededError and ends the stream, as cancel() does
(CANCELLED); the next search opens a new stream. A stream that broke after answering (the
server restarted, the connection dropped) is reopened once and the search sent again (searches
change nothing); when that fails too, UnavailableError ("search stream: ...").

Not thread-safe: keep one session per thread (cancel() may be called from any thread).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Union

import grpc
import numpy as np
import numpy.typing as npt

from shoal import errors
from shoal.scan import Hit, hit_of
from shoal.v1 import search_service_pb2 as search_pb2
from shoal.v1 import types_pb2

if TYPE_CHECKING:
    from shoal.client import Client, SearchResult

_METHOD = "/shoal.v1.SearchService/SearchStream"


class _Stream:
    """One open stream: its requests go through a queue the gRPC call reads from."""

    def __init__(self, client: "Client") -> None:
        self.outbox: "queue.SimpleQueue[Optional[search_pb2.SearchStreamRequest]]" = \
            queue.SimpleQueue()
        self.call = client._search.SearchStream(self._requests(), metadata=client._metadata)
        self.answered = 0
        self.cancelled = False
        self.timed_out = False
        self.in_flight_since: Optional[float] = None
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, args=(client.timeout,), daemon=True,
                                          name="shoal-search-session")
        self._watchdog.start()

    def _requests(self) -> Iterator[search_pb2.SearchStreamRequest]:
        while True:
            request = self.outbox.get()
            if request is None:
                return
            yield request

    def _watch(self, timeout: float) -> None:
        while not self._stop.wait(min(1.0, timeout / 4)):
            started = self.in_flight_since
            if started is not None and time.monotonic() - started > timeout:
                self.timed_out = True
                self.call.cancel()
                return

    def exchange(self, request: search_pb2.SearchStreamRequest) -> search_pb2.SearchStreamResponse:
        """Sends `request` and returns its answer; grpc.RpcError or StopIteration when the stream
        ended first."""
        self.in_flight_since = time.monotonic()
        try:
            self.outbox.put(request)
            response = next(self.call)
        finally:
            self.in_flight_since = None
        self.answered += 1
        return response

    def cancel(self) -> None:
        self.cancelled = True
        self.call.cancel()

    def close(self) -> None:
        """Closes our side (the server then ends the stream) and stops the watchdog."""
        self.outbox.put(None)
        self._stop.set()


class SearchSession:
    """See the module docstring. Made by Client.search_session()."""

    def __init__(self, client: "Client") -> None:
        """A session over `client`'s channel, key and timeout; no stream until a search."""
        self._client = client
        self._stream: Optional[_Stream] = None
        self._sequence = 0

    def __enter__(self) -> "SearchSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ends the stream (a later search opens a new one)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def cancel(self) -> None:
        """Ends the stream now: a search in flight raises ShoalError(CANCELLED); the next search
        opens a new stream. Thread-safe."""
        stream = self._stream
        if stream is not None:
            stream.cancel()

    def search(self, collection: str, queries: npt.ArrayLike, k: int = 10,
               filter: Optional[types_pb2.Filter] = None, max_postings: int = 0,
               pruning_ratio: float = 0.0, tenant: str = "", with_attributes: bool = False,
               with_vectors: bool = False, target_recall: float = 0.0
               ) -> Union["SearchResult", List[Hit], List[List[Hit]]]:
        """As Client.search, over the session's stream."""
        from shoal.client import _result_arrays, _warn_about_filter  # (circular at load time)
        single = np.ndim(queries) == 1
        request = self._client._search_request(collection, queries, k, filter, max_postings,
                                               pruning_ratio, tenant, target_recall)
        request.with_attributes = with_attributes
        request.with_vectors = with_vectors
        response = self._exchange(request)
        if response.code != 0:
            raise errors.from_code(response.code, response.message, _METHOD)
        _warn_about_filter(response.response)
        results = response.response.results
        if with_attributes or with_vectors:
            hits = [[hit_of(h) for h in r.hits] for r in results]
            return hits[0] if single else hits
        return _result_arrays(results, k, single)

    def _exchange(self, search: search_pb2.SearchRequest) -> search_pb2.SearchStreamResponse:
        for attempt in (0, 1):
            if self._stream is not None and self._stream.cancelled:
                self.close()  # cancelled between searches: start afresh
            if self._stream is None:
                self._stream = _Stream(self._client)
            stream = self._stream
            served_before = stream.answered > 0
            self._sequence += 1
            try:
                response = stream.exchange(
                    search_pb2.SearchStreamRequest(sequence=self._sequence, search=search))
            except (grpc.RpcError, StopIteration) as ended:
                self.close()
                if stream.timed_out:
                    raise errors.DeadlineExceededError(
                        grpc.StatusCode.DEADLINE_EXCEEDED,
                        f"search stream: no answer within {self._client.timeout} s",
                        _METHOD) from None
                if stream.cancelled:
                    raise errors.ShoalError(grpc.StatusCode.CANCELLED, "search stream: cancelled",
                                            _METHOD) from None
                if served_before and attempt == 0:
                    continue  # the connection may have gone since: one new stream
                raise _stream_error(ended) from None
            if response.sequence != self._sequence:
                self.close()
                raise errors.ShoalError(
                    grpc.StatusCode.INTERNAL,
                    f"search stream: answer {response.sequence} to request {self._sequence}",
                    _METHOD)
            return response
        raise AssertionError("unreachable")


def _stream_error(ended: BaseException) -> errors.ShoalError:
    """The error for a stream that ended before answering."""
    if not isinstance(ended, grpc.RpcError):
        return errors.UnavailableError(grpc.StatusCode.UNAVAILABLE,
                                       "search stream: the server ended the stream unanswered",
                                       _METHOD)
    if ended.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return errors.UnavailableError(grpc.StatusCode.UNAVAILABLE,
                                       f"search stream: {ended.details() or ''}", _METHOD)
    return errors.from_rpc_error(ended, _METHOD)
