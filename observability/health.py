"""Liveness and readiness: is the process up; can it serve (database, Redis, a worker)?"""
from django.db import connection

from responses_app import backends

from .redis_client import probe_client


def readiness() -> dict:
    """Each dependency's state, and `ready` if all of them are fine."""
    checks = {"database": _database()}
    if backends.in_process():
        checks["redis"] = {"ok": True, "detail": "not used (embedded mode)"}
        checks["workers"] = {"ok": True, "detail": "in-process (embedded mode)"}
    else:
        checks["redis"], checks["workers"] = _redis_and_workers()
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


def _brief(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"
