"""Worker liveness: each worker process has an id and keeps a heartbeat key fresh.

The claim of a run records the claiming worker's id; the watchdog fails runs whose worker
has no fresh heartbeat. In Redis a heartbeat is `gw:worker:<id>` with a TTL; embedded, the
one process is the only worker, so only its own id is alive.

A run whose worker is alive but cannot go on with it (the database unreachable from that
worker: worker/run_store.py) is given up by it: its id and why are put in the hash
`gw:runs:given-up`, and the watchdog, on a process that reaches the database, fails it as
if its worker had died, with that message. The hash is in Redis, beside the heartbeats,
because the worker cannot write to the database; embedded, it is the process's memory.
"""
import os
import secrets
import socket
import time

from django.conf import settings

from .. import backends

KEY_PREFIX = "gw:worker:"
GIVEN_UP_KEY = "gw:runs:given-up"
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def worker_id() -> str:
    return WORKER_ID


def heartbeats():
    """The heartbeats of this deployment (backends.py)."""
    return backends.service("heartbeats")


class RedisHeartbeats:
    def beat(self) -> None:
        """Refresh the heartbeat, and the worker's registration as a run queue consumer
        (redelivery.py), in one round trip."""
        from ..redis_client import sync_redis
        from .redelivery import register

        pipe = sync_redis().pipeline(transaction=False)
        pipe.set(KEY_PREFIX + WORKER_ID, int(time.time()),
                 px=int(settings.WORKER_HEARTBEAT_TTL_SECONDS * 1000))
        register(pipe, WORKER_ID)
        pipe.execute()

    def alive(self, worker_ids: set[str]) -> set[str]:
        from ..redis_client import sync_redis

        ids = sorted(worker_ids)
        if not ids:
            return set()
        found = sync_redis().mget([KEY_PREFIX + worker for worker in ids])
        return {worker for worker, value in zip(ids, found) if value is not None}

    def live_workers(self, client=None) -> list[str]:
        """The ids of the workers whose heartbeat is fresh (readiness, metrics)."""
        from ..redis_client import sync_redis

        client = client or sync_redis()
        return [key.decode()[len(KEY_PREFIX):]
                for key in client.scan_iter(match=KEY_PREFIX + "*", count=1000)]

    def forget(self) -> None:
        """A worker shutting down cleanly says so at once."""
        from ..redis_client import sync_redis

        sync_redis().delete(KEY_PREFIX + WORKER_ID)

    def give_up(self, response_id: str, why: str) -> None:
        """This worker cannot end the run `response_id`: the watchdog fails it (`why`: the
        message of its error)."""
        from ..redis_client import sync_redis

        sync_redis().hset(GIVEN_UP_KEY, response_id, why)

    def given_up(self) -> dict[str, str]:
        """The runs given up and why."""
        from ..redis_client import sync_redis

        return {key.decode(): why.decode()
                for key, why in sync_redis().hgetall(GIVEN_UP_KEY).items()}

    def forget_given_up(self, response_ids: set[str]) -> None:
        from ..redis_client import sync_redis

        if response_ids:
            sync_redis().hdel(GIVEN_UP_KEY, *sorted(response_ids))


_RUNS_GIVEN_UP: dict[str, str] = {}  # embedded: the runs this process gave up, and why


class MemoryHeartbeats:
    def beat(self) -> None:
        return None

    def alive(self, worker_ids: set[str]) -> set[str]:
        return worker_ids & {WORKER_ID}

    def live_workers(self, client=None) -> list[str]:
        return [WORKER_ID]

    def forget(self) -> None:
        return None

    def give_up(self, response_id: str, why: str) -> None:
        _RUNS_GIVEN_UP[response_id] = why

    def given_up(self) -> dict[str, str]:
        return dict(_RUNS_GIVEN_UP)

    def forget_given_up(self, response_ids: set[str]) -> None:
        for response_id in response_ids:
            _RUNS_GIVEN_UP.pop(response_id, None)
