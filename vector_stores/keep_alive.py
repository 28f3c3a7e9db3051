"""A sync keep-alive HTTP/1.1 client for the embedding upstream's `POST /embeddings`
(http.client): one connection per thread and origin, kept between calls. It stands where
httpx.Client stood: httpx's request building, auth and redirect flows, cookie jar and
h11 parsing cost ~1.0 ms of CPU per call against ~0.25 ms here (300 calls to the fake
upstream, same body and reply), in a search that spends ~4 ms of CPU in all
(bench/README.md, "Statements built once per shape"). No redirects, proxies, cookies or
content decoding (the request asks for `identity`): the embedding call uses none of them,
as the worker's upstream client (responses_app/worker/http_stream.py) does not. No
upstream call of the gateway reads HTTP(S)_PROXY (the httpx ones say `trust_env=False`;
docs/configuration.md, "Proxies"): this client going direct is the rule, not an exception
(tests/test_upstream_proxy_env.py, through a loopback proxy).

It answers as httpx does, so that embedding.post_embeddings is the same for both: an
httpx.Response, or an httpx.HTTPError (ConnectError / ConnectTimeout before a connection,
ReadTimeout when the server says nothing for the idle timeout, RemoteProtocolError when the
connection broke or sent bad HTTP). A kept connection the server closed while idle is
found when the request is sent and the request goes once more on a new one (embedding is
idempotent).
"""
import http.client
import json
import ssl
import threading
from functools import lru_cache
from urllib.parse import urlsplit

import httpx

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class KeepAliveClient:
    """POSTs of JSON with the given timeouts, each thread on its own connections."""

    def __init__(self, connect_timeout: float, idle_timeout: float):
        self.connect_timeout, self.idle_timeout = connect_timeout, idle_timeout
        self._local = threading.local()

    def post(self, url: str, *, json: dict, headers: dict) -> httpx.Response:
        """One POST of `json`; its response read whole."""
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        body = _dumps(json)
        headers = {**headers, "content-type": "application/json"}
        for attempt in (0, 1):
            connection, kept = self._connection(parts)
            try:
                connection.request("POST", path or "/", body=body, headers=headers)
                reply = connection.getresponse()
                content = reply.read()
            except _STALE as exc:
                self._drop(parts, connection)
                if kept and attempt == 0:
                    continue
                raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from exc
            except TimeoutError as exc:
                self._drop(parts, connection)
                raise httpx.ReadTimeout(str(exc) or "timed out") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop(parts, connection)
                raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from exc
            if reply.will_close:
                self._drop(parts, connection)
            return httpx.Response(reply.status, headers=reply.getheaders(), content=content)
        raise AssertionError("unreachable")

    def _connection(self, parts) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to the URL's origin, and whether it was kept."""
        connections = self._connections()
        key = (parts.scheme, parts.hostname, parts.port)
        connection = connections.get(key)
        if connection is not None:
            return connection, True
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=self.connect_timeout, context=_tls_context())
        else:
            connection = http.client.HTTPConnection(parts.hostname, parts.port,
                                                    timeout=self.connect_timeout)
        try:
            connection.connect()
        except TimeoutError as exc:
            connection.close()
            raise httpx.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            connection.close()
            raise httpx.ConnectError(f"{type(exc).__name__}: {exc}") from exc
        connection.sock.settimeout(self.idle_timeout)
        connections[key] = connection
        return connection, False

    def _drop(self, parts, connection: http.client.HTTPConnection) -> None:
        connection.close()
        self._connections().pop((parts.scheme, parts.hostname, parts.port), None)

    def _connections(self) -> dict:
        connections = getattr(self._local, "connections", None)
        if connections is None:
            connections = self._local.connections = {}
        return connections


def _dumps(body: dict) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()

