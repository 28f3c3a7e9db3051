"""A streamed upstream answer's Chat Completions chunks, decoded read by read
(ChunkBatches), and the failures after its first byte (UpstreamStreamFailed): a timeout
(no byte for the route's idle timeout), a broken connection, a stream cut short before
`[DONE]`, a malformed chunk or an error the upstream put in the stream. upstream.py opens
the stream; these are never retried.

A malformed or error chunk fails the stream after the chunks before it: those of its own
read are handed over first (its batch ends there), then the failure is raised, so what the
client and the stored response get does not depend on how the upstream's bytes were split
into reads. A chunk that is JSON but not of a chunk's shape is malformed too; nothing
checks that as chunks come: where a reader of chunks (here, the runs' translation) fails
on one with SHAPE_ERRORS, `malformed_or_raise` checks it (translation.chunk_shape). So
is one nested deeper than the gateway can write back, checked as it is decoded (`_decode`,
chunk_shape.too_deep): before, the run that wrote it crashed.
"""
import asyncio
import logging

import orjson

from ..create.nul import may_hold_nul, without_nul
from ..translation.chunk_shape import DEEP_BYTES, DEEPEST, chunk_problem, too_deep
from .http_stream import StreamedResponse
from .text_lane import lone_chunk

log = logging.getLogger(__name__)
# what reading a chunk of the wrong shape raises ({"choices": 5}: TypeError, ...)
SHAPE_ERRORS = (TypeError, AttributeError, KeyError, ValueError)


class UpstreamStreamFailed(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class ChunkBatches:
    """The decoded chunks of each read of the upstream, a list per read: iterated
    (`async for`), and from any point on, if the caller wants, pushed (`push`).

    Reads at most once per `read_interval` once the first output arrived: chunks that
    arrive meanwhile are taken in one go, sparing an event-loop wake-up, a bus entry and a
    client write per chunk. Nothing is held back before the first output (time to first
    delta), nor after the model's finish reason: what follows it (the usage chunk,
    `[DONE]`) comes at once, so the end is not held for an interval.
    """

    def __init__(self, response: StreamedResponse, read_interval: float):
        self.response, self.read_interval = response, read_interval
        self.buffer = b""
        self.finishing = False
        self.done = False  # nothing more to take: [DONE] came, or `failure` (below)
        self.failure: UpstreamStreamFailed | None = None  # a bad chunk after good ones
        self._pulled = self._reads = None  # the iteration's generators, once started

    def __aiter__(self):
        self._pulled = self._pull()
        return self._pulled

    async def _pull(self):
        self._reads = self.response.batches(self.read_interval)
        try:
            async for data in self._reads:
                batch = self._decoded(data)
                if batch is None:
                    continue
                yield batch
                if self.done:
                    if self.failure is not None:
                        raise self.failure
                    return
        except (asyncio.TimeoutError, ConnectionError) as exc:
            raise _read_failure(exc) from None
        raise _cut_short()

    async def push(self, sink, lane=None) -> None:
        """The rest of the batches, each handed to `sink(batch)` as its read arrives (from
        the connection's read callback: the waiting task wakes only at the end); returns
        after `[DONE]`, raises what `sink` raised or what iterating would.

        `lane(chunk)`, if given, is offered first the chunk of a read that is one whole
        event while the response is paced (text_lane.py); it takes it (True) or leaves it,
        unchanged, to the general path (False): decoded once either way."""
        for generator in (self._pulled, self._reads):  # an iteration left at a batch
            if generator is not None:
                await generator.aclose()
        if self.done:
            if self.failure is not None:  # it ended the batch the iteration was left at
                raise self.failure
            return
        failures = []

        def read(data: bytes) -> bool:
            chunk = lone_chunk(data) if lane is not None and not self.buffer else None
            try:
                if chunk is None:
                    batch = self._decoded(data)
                elif self.response.paced and not self.finishing and lane(chunk):
                    return False
                else:
                    batch = self._checked([chunk])
                if batch is not None:
                    sink(batch)
            except BaseException as exc:  # a bad chunk, or the sink's or lane's failure
                failures.append(exc)  # raised as it is, once the read callback is left
                return True
            return self.done

        try:
            await self.response.deliver(read, self.read_interval)
        except (asyncio.TimeoutError, ConnectionError) as exc:
            raise _read_failure(exc) from None
        if failures:
            raise failures[0]
        if not self.done:
            raise _cut_short()
        if self.failure is not None:
            raise self.failure

    def _decoded(self, data: bytes) -> list | None:
        """The chunks whose lines `data` completes (None if it completes none), `done`
        once `[DONE]` came; paces the response once output came, unpaces it near the end.
        A bad chunk raises its failure, or, after good chunks of the same read, ends the
        batch with them and is kept as `failure` (raised once they are handed over)."""
        buffer = self.buffer + data if self.buffer else data  # usually whole events: no copy
        if b"\n" not in data:
            self.buffer = buffer
            return None
        nul = may_hold_nul(buffer)  # one look for the whole read, not one per chunk
        *lines, self.buffer = buffer.split(b"\n")
        batch = []
        try:  # costs nothing unless a chunk fails (Python 3.11's zero-cost try)
            for line in lines:
                if line[:5] != b"data:":
                    continue  # comments, event names, blank lines
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    self.done = True
                    return batch
                batch.append(_decode(payload, nul))
        except UpstreamStreamFailed as failure:
            if not batch:
                raise
            self.failure, self.done = failure, True
            return batch
        return self._checked(batch) if batch else None

    def _checked(self, batch: list) -> list:
        """`batch`, a read's chunks, once they paced or unpaced the response (_decoded)."""
        if not self.finishing:
            response = self.response
            try:
                if _finish_in(batch):  # it is near the end
                    self.finishing = True
                    response.unpace()
                elif not response.paced and any(_has_output(chunk) for chunk in batch):
                    response.pace()
            except SHAPE_ERRORS as error:
                return self._cut_at_bad_shape(batch, error)
        return batch

    def _cut_at_bad_shape(self, batch: list, error: Exception) -> list:
        """The chunks of `batch` before its first chunk off shape, that chunk's failure
        kept (raised if none is before it); `error` raised again if none is off shape."""
        bad = next((i for i, chunk in enumerate(batch) if chunk_problem(chunk)), None)
        if bad is None:
            raise error
        failure = malformed_or_raise(batch[bad], error)
        if bad == 0:
            raise failure from None
        self.failure, self.done = failure, True
        return batch[:bad]


def _read_failure(exc: Exception) -> UpstreamStreamFailed:
    """What a read's timeout (nothing for the idle timeout) or broken connection is."""
    if isinstance(exc, asyncio.TimeoutError):
        return UpstreamStreamFailed(
            "request_timeout", "The upstream sent nothing for longer than the timeout.")
    return UpstreamStreamFailed(
        "server_error", f"The upstream connection failed mid-stream: {exc!s}")


def _cut_short() -> UpstreamStreamFailed:
    return UpstreamStreamFailed("server_error",
                                "The upstream stream ended before it said it was done.")


def _malformed() -> UpstreamStreamFailed:
    return UpstreamStreamFailed("server_error", "The upstream sent a malformed stream chunk.")


def malformed_or_raise(chunk, error: Exception) -> UpstreamStreamFailed:
    """Where reading `chunk` raised `error` (one of SHAPE_ERRORS): the malformed chunk's
    failure if the chunk is off shape; else `error` raised again (the gateway's own bug,
    for its run's crash path to log)."""
    problem = chunk_problem(chunk)
    if problem is None:
        raise error
    log.warning("the upstream sent a chunk off shape: %s", problem)
    return _malformed()


def _has_output(chunk: dict) -> bool:
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if any(delta.get(key) for key in ("content", "reasoning_content", "reasoning",
                                          "refusal", "tool_calls")):
            return True
    return False


def _finish_in(batch: list) -> bool:
    """Whether a chunk of `batch` carries a finish reason (plain loops: this runs per read)."""
    for chunk in batch:
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason"):
                return True
    return False


def _decode(payload: bytes, nul: bool) -> dict:
    """A chunk's JSON; its NUL characters replaced when `nul` (its read may hold one).
    Malformed: not JSON, not an object, or nested too deep to write (chunk_shape.py)."""
    try:
        chunk = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise _malformed() from None
    if not isinstance(chunk, dict):  # `data: []`, `data: 5`: JSON, but not a chunk
        raise _malformed()
    if len(payload) > DEEP_BYTES and too_deep(chunk):  # readable, but not writable
        log.warning("the upstream sent a chunk nested deeper than %d levels", DEEPEST)
        raise _malformed()
    if chunk.get("error"):
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise UpstreamStreamFailed("server_error", f"The upstream failed: {message}")
    return without_nul(chunk) if nul and may_hold_nul(payload) else chunk
