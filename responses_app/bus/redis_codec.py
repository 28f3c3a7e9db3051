"""How the Redis bus lays out a response's events: the stream's key, each entry's id and
fields, and the asyncio client its writer and reader use.

Entry ids are `1-<last sequence number in the entry>`, so `starting_after=N` is a cursor
(`XREAD` from `1-N`) and a second writer's `XADD` of an id at or below the top fails: a
zombie run cannot interleave events. An error that ended a run before it started is the
entry `0-1`; an end without events (a run cancelled or failed before its first event, or
with nothing left open) is the entry `2-0`, above every event. An end appended from
outside the run (the watchdog failing an orphaned run, a queued response cancelled) is
`2-<last sequence number>`, above every id a run writes: a run that outlived it (a worker
cut off by a partition, back later) has its next write refused, however far its sequence
numbers got meanwhile. Each Redis entry carries its events in `d`, their JSON objects
one per line (JSON Lines: orjson writes no raw newline), and the time it was written (`t`,
Unix milliseconds): one small field per write, read only by the admin's event view.

Each entry appended is also published on a channel named as its stream's key (the
relay's fast path, redis_reader.py): the message is `<id> <f> <kind> <data>`, `kind`
empty for events, `e` with the end, `x` for an error (`data` its JSON). Pub/sub channels
are the server's, not a database's: response ids are unique, so one server's databases
do not mix.
"""
import orjson
import redis.asyncio as aioredis

from ..redis_client import DRIVER_INFO
from .entries import Entry, now_ms

KEY_PREFIX = "gw:events:"
ERROR_ENTRY_ID = "0-1"
END_MARKER_ID = "2-0"


def async_client(url: str) -> aioredis.Redis:
    """A client whose callers wait for a free connection rather than fail."""
    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=64, timeout=20,
                                                     socket_timeout=10, socket_connect_timeout=5,
                                                     driver_info=DRIVER_INFO)
    return aioredis.Redis(connection_pool=pool)


def one_connection_client(url: str) -> aioredis.Redis:
    """A client on one connection (redis-py's `single_connection_client`), for a caller
    that sends one command at a time and bounds each with `asyncio.timeout`.

    What it spares, per command: a pool's loan of a connection (a lock, and a check for
    unread data); and, with no `socket_timeout`, redis-py writes the command at once (with
    one, Python 3.11's `asyncio.wait_for` runs the write as a task of its own, a turn of
    the event loop later). A command cut short by the caller's timeout closes the
    connection; the next one connects again."""
    return aioredis.Redis.from_url(url, single_connection_client=True, socket_timeout=None,
                                   socket_connect_timeout=5, driver_info=DRIVER_INFO)


def stream_key(response_id: str) -> str:
    return KEY_PREFIX + response_id


def encode(entry: Entry) -> dict:
    written_at = now_ms()
    if entry.error is not None:
        return {"x": orjson.dumps(entry.error), "t": written_at}
    fields = {"f": entry.first, "d": b"\n".join(entry.events), "t": written_at}
    if entry.end:
        fields["e"] = 1
    return fields


def entry_id_of(entry: Entry) -> str:
    if entry.error is not None:
        return ERROR_ENTRY_ID
    if entry.first > entry.last:
        return END_MARKER_ID
    return f"1-{entry.last}"


def final_entry_id_of(entry: Entry) -> str:
    """The id of an end appended from outside the run: above every id a run writes."""
    return f"2-{max(entry.last, 0)}"


def decode(entry_id: bytes, fields: dict) -> Entry:
    if b"x" in fields:
        error = orjson.loads(fields[b"x"])
        return Entry(first=-1, last=-1, events=[], end=True, error=error)
    if entry_id.startswith(b"2-") and not fields.get(b"d"):
        first = int(fields[b"f"])
        return Entry(first=first, last=first - 1, events=[], end=True)
    last = int(entry_id.split(b"-", 1)[1])
    data = fields[b"d"]
    events = data.split(b"\n") if data[:1] == b"{" else _framed_events(data)
    return Entry(first=int(fields[b"f"]), last=last, events=events, end=b"e" in fields)


def decode_flat(entry_id: bytes, flat: list) -> Entry:
    """`decode` of an entry whose fields come as the XREAD reply gives them, one flat list.
    A run's entry of events (`1-<last>`: `f`, `d` JSON Lines, `t`, then `e` at the end, as
    redis_append.py writes them) is read in place; any other (an error, an end marker, an
    older writer's layout) through `decode`, so both give the same Entry. Measured (the
    web's shared read, 300 paced streams, in process; bench/README.md's issue-31 web
    section, round 3): ~1-2 us of ~20 us of web CPU per entry."""
    size = len(flat)
    if ((size == 6 or (size == 8 and flat[6] == b"e")) and flat[0] == b"f"
            and flat[2] == b"d" and entry_id[:2] == b"1-" and flat[3][:1] == b"{"):
        return Entry(int(flat[1]), int(entry_id[2:]), flat[3].split(b"\n"), size == 8)
    it = iter(flat)
    return decode(entry_id, dict(zip(it, it)))


def message_of(entry_id: str, entry: Entry) -> bytes:
    """The pub/sub message of `entry` appended as `entry_id` (redis_append.py's script
    builds the same from its arguments)."""
    if entry.error is not None:
        return b"%s -1 x %s" % (entry_id.encode(), orjson.dumps(entry.error))
    return b"%s %d %s %s" % (entry_id.encode(), entry.first, b"e" if entry.end else b"",
                             b"\n".join(entry.events))


def decode_message(data: bytes) -> Entry:
    """The entry of a pub/sub message (`message_of`); a run's entry of events in place, any
    other through `decode`, so both give the same Entry as the stream's own."""
    entry_id, first, kind, payload = data.split(b" ", 3)
    if kind != b"x" and entry_id[:2] == b"1-" and payload[:1] == b"{":
        return Entry(int(first), int(entry_id[2:]), payload.split(b"\n"), kind == b"e")
    if kind == b"x":
        return decode(entry_id, {b"x": payload})
    fields = {b"f": first, b"d": payload}
    if kind == b"e":
        fields[b"e"] = b"1"
    return decode(entry_id, fields)


def _framed_events(data: bytes) -> list[bytes]:
    """The events of an entry written by a worker of the previous release, as SSE blocks
    (`event: …\ndata: {…}\n\n`): kept readable while such entries may still be retained
    (EVENT_RETENTION_SECONDS after an upgrade), to be removed with the next release."""
    return [block[block.index(b"\ndata: ") + 7:] for block in data.split(b"\n\n") if block]
