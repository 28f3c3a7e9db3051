"""Liveness and readiness: is the process up; can it serve (database, Redis, a worker, the
default upstream)?"""
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection

from responses_app import backends

from .redis_client import probe_client

# A probe answers quickly, whatever the model server does.
UPSTREAM_PROBE_TIMEOUT_SECONDS = 2.0


def readiness() -> dict:
    """Each dependency's state, and `ready` if all of them are fine."""
    checks = {"database": _database()}
    if backends.in_process():
        checks["redis"] = {"ok": True, "detail": "not used (embedded mode)"}
        checks["workers"] = {"ok": True, "detail": "in-process (embedded mode)"}
    else:
        checks["redis"], checks["workers"] = _redis_and_workers()
    checks["upstream"] = _upstream(settings.UPSTREAM_BASE_URL)
    ready = all(check["ok"] for check in checks.values())
    return {"status": "ready" if ready else "unavailable", "checks": checks}


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "detail": _brief(exc)}


def _redis_and_workers() -> tuple[dict, dict]:
    client = probe_client()
    try:
        client.ping()
        workers = backends.service("heartbeats").live_workers(client)
    except Exception as exc:
        failure = {"ok": False, "detail": _brief(exc)}
        return failure, {"ok": False, "detail": "unknown: Redis is unavailable"}
    if not workers:
        return {"ok": True}, {"ok": False, "live": 0, "detail": "no worker heartbeat"}
    return {"ok": True}, {"ok": True, "live": len(workers)}


def _upstream(base_url: str) -> dict:
    """Does the default upstream (UPSTREAM_BASE_URL) accept a TCP connection? Named either
    way (without credentials): a model server on the host that listens on loopback only is
    refused from a container, and this says which address was tried."""
    parts = urlsplit(base_url)
    url = parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment="").geturl()
    try:
        if not parts.hostname:
            raise ValueError("no host in UPSTREAM_BASE_URL")
        address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        with socket.create_connection(address, UPSTREAM_PROBE_TIMEOUT_SECONDS):
            return {"ok": True, "url": url}
    except (OSError, ValueError) as exc:
        return {"ok": False, "url": url, "detail": f"cannot connect: {_brief(exc)}"}


def _brief(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"
