"""The upstream Chat Completions client: one streaming POST, decoded into chunk dicts.

The HTTP is http_stream's lean client (the gateway's hottest loop; see its docstring for
why it is not aiohttp), one per run loop, its connections kept alive across runs.

The target is an upstream route (upstreams.routing.Route): its URL, key, timeouts, extra
headers and concurrency limit. Failures before the first byte are retried as the
RetryPolicy allows (connection failures, 429/502/503/504), then raise UpstreamRejected
with the HTTP status to answer with (a 429 stays a 429); failures after it are never
retried and raise UpstreamStreamFailed with the code to put in `response.failed`
(chunk_batches.py reads the stream). No byte for `idle_timeout` seconds is a
`request_timeout`. HTTPS upstreams are verified against
the default trust store (`SSL_CERT_FILE` names another).
"""
import asyncio
import logging
import math
from contextlib import asynccontextmanager

import orjson
from django.conf import settings

from upstreams import pool
from upstreams.pool import UpstreamBusy
from upstreams.replicas import Placement
from upstreams.retry_policy import RetryPolicy, delay_before_retry
from upstreams.routing import Route

from ..bus import event_bus
from ..errors import APIError
from .chunk_batches import ChunkBatches, UpstreamStreamFailed
from .http_stream import ConnectFailed, HttpClient, StreamedResponse

__all__ = ["UpstreamRejected", "UpstreamStreamFailed", "ChunkBatches", "open_chat_stream",
           "http_client", "close_loop_client", "rejected_from_response", "NO_RETRY",
           "configured_retry"]

log = logging.getLogger(__name__)

_clients: dict = {}  # event loop -> HttpClient
NO_RETRY = RetryPolicy()


class UpstreamRejected(APIError):
    """The upstream refused or failed before streaming: the error the client gets (a
    server error unless said otherwise)."""

    status = 502
    type = "server_error"
    # What the retry policy reads: the upstream's HTTP status and Retry-After, if it
    # answered; whether the replica failed (no connection, a 5xx: it is cooled down).
    upstream_status: int | None = None
    upstream_retry_after: str | None = None
    replica_failed = False


def configured_retry() -> RetryPolicy:
    """The retry policy of a run's upstream calls (UPSTREAM_MAX_RETRIES and its wait)."""
    return RetryPolicy(max_retries=settings.UPSTREAM_MAX_RETRIES,
                       max_wait=settings.UPSTREAM_RETRY_MAX_WAIT)


def http_client() -> HttpClient:
    """The run loop's shared client (connections pooled across runs)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        tick = settings.STREAM_FLUSH_TICK_MS / 1000 if settings.STREAM_TICK_READS else 0.0
        client = _clients[loop] = HttpClient(tick, _flush_bus)
    return client


def _flush_bus() -> None:
    """After a pass of tick reads: the bus sends what the pass's reads wrote."""
    event_bus().flush_now()


async def close_loop_client() -> None:
    """Close this loop's upstream connections (for a loop that is about to end)."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        client.close()


@asynccontextmanager
async def open_chat_stream(target: Route, body: dict, read_interval: float = 0.0,
                           retry: RetryPolicy = NO_RETRY, placement: Placement | None = None):
    """POST the chat request and yield an async iterator of decoded chunks, a list per read.

    The replica is upstreams.pool's choice (`placement`: the call's chain, told the replica
    chosen); one that fails before its first byte (no connection, a 5xx) is cooled down and
    the call sent to another at once, before the retry policy's waits."""
    if target.problem:
        raise UpstreamRejected(target.problem, code="upstream_misconfigured")
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity", **target.request_headers()}
    try:
        # waiting for a slot counts as connecting: the client is waiting for its first event
        response, lease = await _post_until_answered(
            target, orjson.dumps(body), headers, retry, placement or Placement())
    except UpstreamBusy as busy:
        raise UpstreamRejected(str(busy), status=503, code="upstream_busy",
                               headers={"Retry-After": "1"}) from None
    try:
        yield ChunkBatches(response, read_interval)
    finally:
        response.release()
        await pool.release(lease)


async def _post_until_answered(target: Route, data: bytes, headers: dict, retry: RetryPolicy,
                               placement: Placement) -> tuple[StreamedResponse, pool.Lease]:
    """The upstream's successful response and its replica's lease, after the failovers and
    retries allowed before its first byte."""
    retries_made = 0
    tried: list[str] = []  # replicas that failed this attempt (cooled down)
    failure = None
    while True:
        lease = await pool.take_replica(target, placement, tried, wait=target.connect_timeout)
        if lease is None:  # every replica left is cooling down
            failure = failure or _none_healthy(target, placement.retry_after)
        else:
            try:
                response, failure = await _attempt(target, lease, data, headers)
            except BaseException:  # cancelled, or a failure that is not retried
                pool.release_soon(lease)
                raise
            if response is not None:
                pool.answered(target, placement)
                return response, lease
            await pool.release(lease)
            if failure.replica_failed and len(target.replicas) > 1:
                await pool.cool_down(target, lease.url)
                tried.append(lease.url)
                placement.failovers += 1
                if len(tried) < len(target.replicas):
                    log.info("upstream %s: replica %s failed (%s); trying another",
                             target.name, lease.url, failure)
                    continue
        delay = delay_before_retry(retry, retries_made, status=failure.upstream_status,
                                   retry_after=failure.upstream_retry_after)
        if delay is None:
            raise failure
        retries_made += 1
        tried = []
        log.info("upstream %s: %s; retry %d in %.2fs", target.name, failure, retries_made, delay)
        await asyncio.sleep(delay)


async def _attempt(target: Route, lease: pool.Lease, data: bytes,
                   headers: dict) -> tuple[StreamedResponse | None, "UpstreamRejected | None"]:
    """One POST to the lease's replica: (the response, None) or (None, the failure)."""
    try:
        response = await http_client().post(
            f"{lease.url}/chat/completions", data, headers,
            connect_timeout=target.connect_timeout, idle_timeout=target.idle_timeout)
    except ConnectFailed as exc:  # no response byte: safe to send again
        failure = _connection_failure(exc)
        failure.replica_failed = True
        return None, failure
    except (asyncio.TimeoutError, ConnectionError) as exc:
        raise _connection_failure(exc) from exc  # it may be generating: not sent twice
    if response.status < 400:
        return response, None
    content = await _read_error_body(response)
    response.release()
    failure = rejected_from_response(response.status, response.headers, content)
    failure.upstream_status = response.status
    failure.upstream_retry_after = response.headers.get("retry-after")
    failure.replica_failed = response.status >= 500
    return None, failure


def _none_healthy(target: Route, retry_after: float) -> "UpstreamRejected":
    seconds = max(1, math.ceil(retry_after))
    return UpstreamRejected(
        f"Every replica of the upstream '{target.name}' failed recently; retry in {seconds} s.",
        status=503, code="upstream_unavailable", headers={"Retry-After": str(seconds)})


def _connection_failure(exc: Exception) -> "UpstreamRejected":
    if isinstance(exc, asyncio.TimeoutError):
        return UpstreamRejected(
            f"The upstream model server did not answer in time ({type(exc).__name__}).",
            status=504, code="upstream_timeout")
    return UpstreamRejected(f"The upstream model server could not be reached: {exc!s}.",
                            code="upstream_unreachable")


async def _read_error_body(response: StreamedResponse) -> bytes:
    try:
        return await response.read()
    except (ConnectionError, asyncio.TimeoutError):
        return b""


def rejected_from_response(status: int, headers, content: bytes) -> UpstreamRejected:
    message = _upstream_message(status, content)
    extra = {}
    if status == 429:
        if "retry-after" in headers:
            extra["Retry-After"] = headers["retry-after"]
        return UpstreamRejected(message, status=429, type="rate_limit_exceeded",
                                code="rate_limit_exceeded", headers=extra)
    if status in (400, 404, 413, 422):
        code = "model_not_found" if status == 404 else "upstream_invalid_request"
        return UpstreamRejected(message, status=400 if status != 404 else 404,
                                type="invalid_request_error", code=code)
    if status in (408, 504):
        return UpstreamRejected(message, status=504, code="upstream_timeout")
    return UpstreamRejected(f"The upstream model server failed with HTTP {status}: {message}",
                            code="upstream_error")


def _upstream_message(status: int, content: bytes) -> str:
    try:
        payload = orjson.loads(content)
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(payload, dict) and payload.get("message"):
            return str(payload["message"])
    except (orjson.JSONDecodeError, AttributeError):
        pass
    text = content[:500].decode("utf-8", "replace").strip()
    return text or f"HTTP {status}"
