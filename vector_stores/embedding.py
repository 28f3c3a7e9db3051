"""Embedding texts through the upstream that serves the embedding model: its route's
`POST /embeddings` (OpenAI's shape), found like a chat model's (upstreams.routing), in
batches of EMBEDDING_BATCH_SIZE. Sync (keep_alive.py's client, answering as httpx does):
ingestion tasks and search run on threads.

Failures before an answer (connection errors, 429/502/503/504) are retried like chat
calls (UPSTREAM_MAX_RETRIES, short backoff); then, or on any other error answer, the call
raises EmbeddingFailed saying what the upstream said.
"""
import threading
import time

import httpx
from django.conf import settings

from upstreams.routing import Route, route_for_model

from .keep_alive import KeepAliveClient

RETRIED_STATUSES = {429, 502, 503, 504, 500}
BACKOFF_SECONDS = 0.2


class EmbeddingFailed(Exception):
    """The embedding upstream failed; the message says how (no secret in it)."""


def embedding_route(model: str | None = None) -> Route:
    return route_for_model(model or settings.EMBEDDING_MODEL)


def post_embeddings(route: Route, body: dict, client: KeepAliveClient) -> httpx.Response:
    """One `POST {route}/embeddings`, retried on connection errors and retryable statuses;
    the last answer (any status), or EmbeddingFailed when none came."""
    if route.problem:
        raise EmbeddingFailed(route.problem)
    attempt = 0
    while True:
        try:
            reply = client.post(f"{route.base_url}/embeddings", json=body,
                                headers=route.request_headers())
        except httpx.HTTPError as exc:
            if attempt >= settings.UPSTREAM_MAX_RETRIES:
                raise EmbeddingFailed(f"The embedding upstream '{route.name}' is unreachable: "
                                      f"{type(exc).__name__}.")
        else:
            if reply.status_code not in RETRIED_STATUSES or attempt >= settings.UPSTREAM_MAX_RETRIES:
                return reply
        attempt += 1
        time.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))


_clients: dict[tuple, KeepAliveClient] = {}
_clients_lock = threading.Lock()


def client_for(route: Route) -> KeepAliveClient:
    """The process's client for the route's server and timeouts (thread-safe, keeps its
    connections, one TLS context per process): a new httpx.Client loaded the CA bundle,
    65 ms of a 140 ms search (cProfile, 2026-11-27, 5,000 chunks, loaded machine), and
    connected anew."""
    key = (route.base_url, route.idle_timeout, route.connect_timeout)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = KeepAliveClient(route.connect_timeout,
                                                         route.idle_timeout)
    return client


def embed_texts(texts: list[str], model: str | None = None) -> list[list[float]]:
    """One vector per text, in order, each of EMBEDDING_DIMENSIONS floats."""
    model = model or settings.EMBEDDING_MODEL
    route = embedding_route(model)
    vectors: list[list[float]] = []
    client = client_for(route)
    for start in range(0, len(texts), settings.EMBEDDING_BATCH_SIZE):
        batch = texts[start:start + settings.EMBEDDING_BATCH_SIZE]
        body = {"model": model, "input": batch}
        if settings.EMBEDDING_REQUEST_DIMENSIONS:
            body["dimensions"] = settings.EMBEDDING_DIMENSIONS
        reply = post_embeddings(route, body, client)
        vectors.extend(_vectors_of(reply, len(batch), route))
    return vectors


def _vectors_of(reply: httpx.Response, expected: int, route: Route) -> list[list[float]]:
    if reply.status_code != 200:
        raise EmbeddingFailed(f"The embedding upstream '{route.name}' answered "
                              f"{reply.status_code}: {_error_message(reply)}")
    try:
        data = sorted(reply.json()["data"], key=lambda entry: entry["index"])
        vectors = [entry["embedding"] for entry in data]
    except (ValueError, KeyError, TypeError):
        raise EmbeddingFailed(f"The embedding upstream '{route.name}' answered no "
                              "embeddings list.")
    if len(vectors) != expected:
        raise EmbeddingFailed(f"The embedding upstream '{route.name}' answered "
                              f"{len(vectors)} embeddings for {expected} texts.")
    for vector in vectors:
        if not isinstance(vector, list) or len(vector) != settings.EMBEDDING_DIMENSIONS:
            size = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise EmbeddingFailed(
                f"The embedding model answered vectors of {size} dimensions; this deployment "
                f"stores {settings.EMBEDDING_DIMENSIONS} (EMBEDDING_DIMENSIONS).")
    return vectors


def _error_message(reply: httpx.Response) -> str:
    try:
        message = reply.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = reply.text
    return str(message)[:300]
