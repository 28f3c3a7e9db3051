"""The production event bus on Redis Streams: one stream per response, written by the runs
of a worker loop through one flusher (redis_writer.py), published as they are appended,
and heard by a web loop on one pub/sub connection (redis_reader.py); the layout of keys,
ids, fields and messages is redis_codec.py's.
Streams expire (PEXPIRE) `retention_seconds` after their last entry. The admin's event
view, deletion and the watchdog's single appends are sync, off the hot path.
"""
import asyncio
import logging
from functools import cached_property

import redis
from redis.exceptions import ResponseError

from ..redis_client import DRIVER_INFO
from .entries import Entry, RetainedLog
from .redis_codec import (decode, encode, entry_id_of, final_entry_id_of, message_of,
                          stream_key)
from .redis_reader import ReadHub
from .redis_writer import RedisLogWriter, StreamWriter
from .subscription import Subscription

log = logging.getLogger(__name__)

RETAINED_READ_LIMIT = 10_000  # entries the admin reads of one stream at most
# append_now: XADD (ARGV[2] the id, ARGV[5...] the fields), PEXPIRE (ARGV[3] ms) and the
# entry's PUBLISH (ARGV[4], redis_codec.message_of), if the stream holds ARGV[1] entries
# (-1: whatever it holds); 0 if it does not.
APPEND_NOW_SCRIPT = """
local seen = tonumber(ARGV[1])
if seen >= 0 and redis.call('XLEN', KEYS[1]) ~= seen then
    return 0
end
redis.call('XADD', KEYS[1], ARGV[2], unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', KEYS[1], ARGV[4])
return 1
"""


class RedisEventBus:
    def __init__(self, url: str, *, retention_seconds: int, run_deadline_seconds: int,
                 flush_interval: float, flush_tick: float = 0.0):
        self.url = url
        self.retention_ms = retention_seconds * 1000
        self.running_ttl_ms = (run_deadline_seconds + retention_seconds) * 1000
        self.flush_interval = flush_interval
        self.flush_tick = flush_tick  # the writer's shortest time between two flushes
        self._writers: dict = {}  # event loop -> StreamWriter
        self._hubs: dict = {}     # event loop -> ReadHub

    async def aclose(self) -> None:
        """Close the running loop's connections (a loop about to end; the web's and the
        worker's loops last as long as their process)."""
        loop = asyncio.get_running_loop()
        writer, hub = self._writers.pop(loop, None), self._hubs.pop(loop, None)
        if writer is not None:
            await writer.aclose()
        if hub is not None:
            await hub.aclose()

    # --- reading whole (the admin's event view, sync) -----------------------------------------
    def read_retained(self, response_id: str) -> RetainedLog | None:
        """The whole stream of a response with its write times while Redis keeps it, or None."""
        with self._sync_client.pipeline(transaction=False) as pipe:
            pipe.xrange(stream_key(response_id), "-", "+", count=RETAINED_READ_LIMIT)
            pipe.pttl(stream_key(response_id))
            raw, ttl_ms = pipe.execute()
        if not raw:
            return None
        entries = []
        for entry_id, fields in raw:
            entry = decode(entry_id, fields)
            entry.at = int(fields[b"t"]) / 1000 if b"t" in fields else None
            entries.append(entry)
        return RetainedLog(entries, ttl_ms / 1000 if ttl_ms > 0 else None)

    # --- writing (the run's loop) --------------------------------------------------------------
    def writer(self, response_id: str) -> RedisLogWriter:
        loop = asyncio.get_running_loop()
        shared = self._writers.get(loop)
        if shared is None:
            shared = self._writers[loop] = StreamWriter(self)
        return RedisLogWriter(shared, response_id)

    def flush_now(self) -> None:
        """Send the running loop's pending entries at once (redis_writer.StreamWriter)."""
        shared = self._writers.get(asyncio.get_running_loop())
        if shared is not None:
            shared.flush_now()

    # --- deleting (any thread, sync) -----------------------------------------------------------
    def delete(self, *response_ids: str) -> None:
        """Drop these responses' event streams (a deleted or pruned response).

        Redis unreachable: logged, not raised; the streams expire with their TTL anyway."""
        if not response_ids:
            return
        try:
            self._sync_client.delete(*[stream_key(response_id) for response_id in response_ids])
        except redis.RedisError as exc:
            log.warning("could not delete %d event streams: %s", len(response_ids), exc)

    @cached_property
    def _sync_client(self) -> redis.Redis:
        """For the sync callers, off the hot path (the admin, deletion, the watchdog)."""
        return redis.Redis.from_url(self.url, socket_timeout=10, socket_connect_timeout=5,
                                    driver_info=DRIVER_INFO)

    # --- reading (the web's loop) --------------------------------------------------------------
    async def subscribe(self, response_id: str, after: int = -1) -> Subscription:
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(loop)
        if hub is None:
            hub = self._hubs[loop] = ReadHub(self)
        return await hub.subscribe(response_id, after)

    async def retained(self, response_id: str) -> bool:
        """Whether the response's events are still kept (they expire after the run)."""
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(loop)
        if hub is None:
            hub = self._hubs[loop] = ReadHub(self)
        return bool(await hub.client.exists(stream_key(response_id)))

    # --- sync access, off the hot path (the watchdog, cancelling a queued run) -----------------
    def append_now(self, response_id: str, entry: Entry, seen: int | None = None) -> bool:
        """Append one entry at once; False if the stream refused it. An end comes from
        outside the run (the watchdog, a cancel): its id fences the run off
        (redis_codec.final_entry_id_of). With `seen` (the number of entries the caller read
        of the stream), only if the stream still has exactly those: a run writing at that
        instant must not see its events numbered twice."""
        key = stream_key(response_id)
        entry_id = final_entry_id_of(entry) if entry.end else entry_id_of(entry)
        ttl = self.retention_ms if entry.end else self.running_ttl_ms
        fields = [part for pair in encode(entry).items() for part in pair]
        try:
            return bool(self._append_script(keys=[key], args=[
                -1 if seen is None else seen, entry_id, ttl, message_of(entry_id, entry),
                *fields]))
        except ResponseError:  # the id is at or below the stream's top
            return False

    @cached_property
    def _append_script(self):
        return self._sync_client.register_script(APPEND_NOW_SCRIPT)
