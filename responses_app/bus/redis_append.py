"""One flush of a worker loop's pending entries as one Redis command: the script that
appends them (APPEND_SCRIPT) and its EVALSHA call, packed here in RESP by hand.

Measured 2026-11-27 (issue 31; docs/architecture.md's ledger), in process on the loaded
2-core machine: redis-py builds and packs a command argument by argument (a type check and
an encode each; the former layout had 9-11 arguments per stream), 15.6-25.0 us per stream
entry of a 50-stream flush; this packs each entry with one `%` format, 1.0-1.9 us, sent as
one byte string (the transport's `writelines` of many small parts cost ~0.7 ms a flush).
The script takes 4 arguments per stream and the field names and write time once: Redis
spends 21.7 vs 27.3 us per 10-stream flush, 92 vs 114 us per 50-stream one (a quiet
Redis, commandstats). The reply (one result per stream) is read by redis-py (hiredis).
Sent below redis-py's command layer, a flush makes no span of OpenTelemetry's Redis
instrumentation: it carries the entries of every run of the loop, so it belongs to no one
run's trace.
"""
import hashlib

import orjson
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from .entries import Entry, now_ms
from .redis_codec import END_MARKER_ID, ERROR_ENTRY_ID

# One flush of a process's pending entries. ARGV[1..3]: the write time (Unix ms, field `t`
# of every entry), the TTL in ms of an ended stream and of a stream's first entry. Then for
# each stream (KEYS[i]) 4 arguments: its entry id, the first sequence number (field `f`),
# its kind ('' events, 'e' events with the end, 'x' the run's HTTP error) and its data
# (field `d`: the events' JSON lines; `x`: the error's JSON). These are redis_codec's
# fields. A refused XADD (an id at or below the top: another writer's stream) is that
# stream's error, the others go on. One command instead of a pipeline of one or two per
# stream: the client's cost of a command (packing, a reply to await and parse) is paid
# once per flush. Each entry appended is also published on the stream's key as a channel
# (redis_codec.message_of's layout): the web processes relaying that stream hear it at
# once, without reading the stream (redis_reader.py).
APPEND_SCRIPT = """
local now, retention, running = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local results = {}
local at = 4
for i, key in ipairs(KEYS) do
    local id, first, kind, data = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    at = at + 4
    local added
    if kind == '' then
        added = redis.pcall('XADD', key, id, 'f', first, 'd', data, 't', now)
    elseif kind == 'e' then
        added = redis.pcall('XADD', key, id, 'f', first, 'd', data, 't', now, 'e', '1')
    else
        added = redis.pcall('XADD', key, id, 'x', data, 't', now)
    end
    if type(added) == 'table' and added.err then
        results[i] = added.err
    else
        if kind ~= '' then
            redis.call('PEXPIRE', key, retention)
        elseif first == '0' then
            redis.call('PEXPIRE', key, running)
        end
        redis.call('PUBLISH', key, id .. ' ' .. first .. ' ' .. kind .. ' ' .. data)
        results[i] = 1
    end
end
return results
"""
SCRIPT_SHA = hashlib.sha1(APPEND_SCRIPT.encode()).hexdigest().encode()
_HEAD = b"$7\r\nEVALSHA\r\n$40\r\n" + SCRIPT_SHA + b"\r\n"
_ERROR_ID = b"$3\r\n%b\r\n" % ERROR_ENTRY_ID.encode()
_END_MARKER_ID = b"$3\r\n%b\r\n" % END_MARKER_ID.encode()


def packed_flush(batch: dict[str, Entry], retention_ms: int, running_ttl_ms: int) -> bytes:
    """The EVALSHA of APPEND_SCRIPT for `batch` (stream key -> its pending entry), in RESP:
    one byte string."""
    head = [b"*%d\r\n" % (6 + 5 * len(batch)), _HEAD, _number(len(batch))]
    args = [_number(now_ms()), _number(retention_ms), _number(running_ttl_ms)]
    for key, entry in batch.items():
        head.append(b"$%d\r\n%b\r\n" % (len(key), key.encode()))
        if entry.error is not None:  # the run's HTTP error (rare)
            args += (_ERROR_ID, b"$2\r\n-1\r\n$1\r\nx\r\n", _bulk(orjson.dumps(entry.error)))
            continue
        if entry.first > entry.last:
            entry_id = _END_MARKER_ID
        else:
            last = b"%d" % entry.last
            entry_id = b"$%d\r\n1-%b\r\n" % (len(last) + 2, last)
        first = b"%d" % entry.first
        data = b"\n".join(entry.events)
        args.append(b"%b$%d\r\n%b\r\n%b$%d\r\n" % (entry_id, len(first), first,
                                                   b"$1\r\ne\r\n" if entry.end else b"$0\r\n\r\n",
                                                   len(data)))
        args.append(data)
        args.append(b"\r\n")
    return b"".join(head) + b"".join(args)


def _number(value: int) -> bytes:
    digits = b"%d" % value
    return b"$%d\r\n%b\r\n" % (len(digits), digits)


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(value), value)


async def send_flush(client, batch: dict[str, Entry], retention_ms: int,
                     running_ttl_ms: int) -> list:
    """Send the flush on `client`'s one connection (redis_codec.one_connection_client) and
    return the script's reply: 1 or the error, per stream. The script is loaded first if
    Redis does not know it (a new or restarted server); a connection that fails is made
    again and the flush sent once more (as redis-py's retry did: a server restarted since
    the last flush). Anything but an error reply closes the connection (a command cut
    short leaves its reply unread); the next one connects."""
    connection = client.connection
    if connection is None:
        await client.initialize()
        connection = client.connection
    command = packed_flush(batch, retention_ms, running_ttl_ms)
    for attempt in (1, 2):
        try:
            return await _sent(client, connection, command)
        except ResponseError:
            raise
        except RedisConnectionError:
            await connection.disconnect(nowait=True)
            if attempt == 2:
                raise
        except BaseException:
            await connection.disconnect(nowait=True)
            raise


async def _sent(client, connection, command: bytes) -> list:
    try:
        await connection.send_packed_command(command, check_health=False)
        return await connection.read_response()
    except NoScriptError:
        await client.script_load(APPEND_SCRIPT)
        await connection.send_packed_command(command, check_health=False)
        return await connection.read_response()
