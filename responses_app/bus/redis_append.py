"""One flush of a worker loop's pending entries as one Redis command: the script that
appends them (APPEND_SCRIPT) and its EVALSHA call, packed here in RESP by hand.

redis-py packs a command argument by argument (a type check and an encode each; a flush of
n streams has 10n arguments), ~8-11 us per stream on this machine; this packs each entry's
arguments with one `%` format and sends the parts as they are: 0.9-1.1 us per stream
(2026-11-27, /tmp micro-benchmark of 50-stream flushes), about a fifth of the worker's
CPU per 50 ms-paced chunk at 300 streams (bench/README.md, issue 31; docs/architecture.md's
ledger). The reply (one result per stream) is still read and parsed by redis-py (hiredis).
"""
import hashlib

from redis.exceptions import NoScriptError, ResponseError

from .entries import Entry, now_ms
from .redis_codec import encode, entry_id_of

# One flush of a process's pending entries: for each stream (KEYS[i]), ARGV holds its
# entry id, the TTL to set in ms (0: leave it), its number of fields, then the fields.
# A refused XADD (an id at or below the top: another writer's stream) is that stream's
# error, the others go on. One command instead of a pipeline of one or two per stream: the
# client's cost of a command (packing, a reply to await and parse) is paid once per flush.
APPEND_SCRIPT = """
local results = {}
local at = 1
for i, key in ipairs(KEYS) do
    local id, ttl, fields = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local added = redis.pcall('XADD', key, id, unpack(ARGV, at + 3, at + 2 + 2 * fields))
    at = at + 3 + 2 * fields
    if type(added) == 'table' and added.err then
        results[i] = added.err
    else
        if ttl > 0 then
            redis.call('PEXPIRE', key, ttl)
        end
        results[i] = 1
    end
end
return results
"""
SCRIPT_SHA = hashlib.sha1(APPEND_SCRIPT.encode()).hexdigest().encode()
_HEAD = b"$7\r\nEVALSHA\r\n$40\r\n" + SCRIPT_SHA + b"\r\n"

# An entry's arguments after its key: id, ttl, field count, then f, d, t (and e) with
# their values; the ids and times are ASCII digits.
_EVENTS = (b"$%d\r\n%b\r\n$%d\r\n%d\r\n$1\r\n3\r\n$1\r\nf\r\n$%d\r\n%d\r\n"
           b"$1\r\nd\r\n$%d\r\n")
_END_EVENTS = (b"$%d\r\n%b\r\n$%d\r\n%d\r\n$1\r\n4\r\n$1\r\nf\r\n$%d\r\n%d\r\n"
               b"$1\r\nd\r\n$%d\r\n")
_ARGS_OF_ENTRY = {False: 9, True: 11}


def packed_flush(batch: dict[str, Entry], retention_ms: int, running_ttl_ms: int) -> bytes:
    """The EVALSHA of APPEND_SCRIPT for `batch` (stream key -> its pending entry), in RESP
    (the fields of redis_codec.encode, in its order). One byte string: the transport's
    `writelines` of many small parts cost ~0.7 ms a flush under load."""
    written_at = b"%d" % now_ms()
    time_field = b"\r\n$1\r\nt\r\n$%d\r\n%b\r\n" % (len(written_at), written_at)
    keys, args = [], [b""]
    count = 3 + len(batch)
    for key, entry in batch.items():
        keys.append(b"$%d\r\n%b\r\n" % (len(key), key.encode()))
        ttl = retention_ms if entry.end else (running_ttl_ms if entry.first == 0 else 0)
        if entry.error is not None:  # the run's HTTP error: rare, packed field by field
            fields = [entry_id_of(entry), ttl, 2, *_pairs(encode(entry))]
            args += [_bulk(b"%d" % value if isinstance(value, int) else value)
                     for value in fields]
            count += len(fields)
            continue
        entry_id = entry_id_of(entry).encode()
        first = b"%d" % entry.first
        data = b"\n".join(entry.events)
        template = _END_EVENTS if entry.end else _EVENTS
        args.append(template % (len(entry_id), entry_id, len(b"%d" % ttl), ttl,
                                len(first), entry.first, len(data)))
        args.append(data)
        args.append(time_field)
        if entry.end:
            args.append(b"$1\r\ne\r\n$1\r\n1\r\n")
        count += _ARGS_OF_ENTRY[entry.end]
    args[0] = b"*%d\r\n" % count + _HEAD + b"$%d\r\n%d\r\n" % (len(b"%d" % len(batch)),
                                                              len(batch))
    args[0] = args[0] + b"".join(keys)
    return b"".join(args)


def _pairs(fields: dict) -> list:
    return [part for pair in fields.items() for part in pair]


def _bulk(value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    return b"$%d\r\n%b\r\n" % (len(value), value)


async def send_flush(client, batch: dict[str, Entry], retention_ms: int,
                     running_ttl_ms: int) -> list:
    """Send the flush on `client`'s one connection (redis_codec.one_connection_client) and
    return the script's reply: 1 or the error, per stream. The script is loaded first if
    Redis does not know it (a new or restarted server). Anything but an error reply closes
    the connection (a command cut short leaves its reply unread); the next one connects."""
    connection = client.connection
    if connection is None:
        await client.initialize()
        connection = client.connection
    command = packed_flush(batch, retention_ms, running_ttl_ms)
    try:
        try:
            await connection.send_packed_command(command, check_health=False)
            return await connection.read_response()
        except NoScriptError:
            await client.script_load(APPEND_SCRIPT)
            await connection.send_packed_command(command, check_health=False)
            return await connection.read_response()
    except ResponseError:
        raise
    except BaseException:
        await connection.disconnect(nowait=True)
        raise
