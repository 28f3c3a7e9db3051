"""The reader's XREAD, packed by hand and sent on the read hub's one connection.

The reader (redis_reader.py) reads streams themselves only to catch up (a new reader, a
gap in what pub/sub brought, streams silent a while), often many at once. redis-py's
asyncio `pack_command` joins its buffer once per argument (quadratic in the command's
length) and encodes each argument anew: ~136 us per 100-key XREAD (2026-11-27, paceweb's
profile). Here each key's argument is encoded once, when its stream is first read, and
a read joins the cached pieces with its cursors; the reply is taken as the parser gives it
(hiredis; RESP3's map or RESP2's array), without the XREAD response callback's conversion.
Measured (2026-11-27, as the shared read of every held stream it was then): 610-766 ->
253-343 us of web CPU per read of 100 streams, 40 with an entry (bench/README.md's
issue-31 section, docs/architecture.md's ledger, "shared XREAD packed by hand").
"""
import redis.asyncio as aioredis


def bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


FROM_START = bulk(b"0-0")


class PackedXRead:
    """XREAD (without BLOCK: what is there) over a set of streams, each from its own id, on
    `client`'s one connection (a `one_connection_client`: one command at a time)."""

    def __init__(self, client: aioredis.Redis):
        self.client = client
        self.head = b"".join((bulk(b"XREAD"), bulk(b"STREAMS")))
        self.key_args: dict[str, bytes] = {}  # stream key -> its argument, encoded once

    def forget(self, key: str) -> None:
        """A stream no longer read: drop its cached argument."""
        self.key_args.pop(key, None)

    def command(self, streams: dict[str, int]) -> bytes:
        """The command's bytes: each stream after the sequence number given (-1: from its
        start)."""
        key_args = self.key_args
        keys = []
        ids = []
        for key, after in streams.items():
            arg = key_args.get(key)
            if arg is None:
                arg = key_args[key] = bulk(key.encode())
            keys.append(arg)
            if after < 0:
                ids.append(FROM_START)
            else:  # bulk() inline: a call per stream costs a third of the packing
                entry_id = b"1-%d" % after
                ids.append(b"$%d\r\n%s\r\n" % (len(entry_id), entry_id))
        return b"".join((b"*%d\r\n" % (2 + 2 * len(keys)), self.head, *keys, *ids))

    async def read(self, command: bytes):
        """The raw reply: None when there was nothing, else (key,
        [[id, [field, value, ...]], ...]) pairs (RESP3's map as its items, RESP2's array
        as it is). Any failure (a timeout of the caller's included) closes the connection:
        the next read connects again."""
        client = self.client
        if client.connection is None:
            await client.initialize()
        connection = client.connection
        try:
            await connection.send_packed_command(command, check_health=False)
            reply = await connection.read_response()
        except BaseException:
            await connection.disconnect(nowait=True)
            raise
        return reply.items() if isinstance(reply, dict) else reply
