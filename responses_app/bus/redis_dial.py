"""Opening a connection to the bus's Redis with an asyncio protocol of our own (the relay's
pub/sub listener, redis_listen.py): the address, TLS, credentials and client name are the
URL's, as redis-py reads them for every other client of ours.

redis-py parses the URL and holds the settings (a connection object made by its pool and
never connected: `host`, `port`, `path`, `username`, `password`, `credential_provider`,
`client_name`, `socket_connect_timeout`, its TCP keep-alive, and for `rediss://` its
`ssl_context`, the same SSL context its own connections use, the certificate options of
the URL's query included); asyncio's `create_connection` / `create_unix_connection` opens
the socket, so that the protocol gets the bytes in `data_received`, with no stream reader
or task between (the relay's cost per entry: redis_listen.py). The greeting is RESP2 commands: AUTH (with a username if the URL has one), CLIENT SETNAME
if the URL names the client, and PING, which a server that wants a password refuses:
the caller waits for every answer before it uses the connection (`greeting`).
"""
import asyncio
import socket

from redis.asyncio import ConnectionPool
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection

from .redis_xread import bulk

CONNECT_SECONDS = 5.0  # as the bus's redis-py clients (`socket_connect_timeout`)


def command(*args: bytes) -> bytes:
    """One RESP command."""
    return b"*%d\r\n%s" % (len(args), b"".join(bulk(arg) for arg in args))


def settings_of(url: str):
    """redis-py's connection object for `url`, never connected: the URL's settings."""
    return ConnectionPool.from_url(url, socket_connect_timeout=CONNECT_SECONDS).make_connection()


def greeting(settings) -> list[bytes]:
    """The commands a new connection sends first, each answered before it is used."""
    username, password = settings.username, settings.password
    if settings.credential_provider is not None:
        credentials = settings.credential_provider.get_credentials()
        username, password = (None, *credentials)[-2:]
    commands = []
    if password:
        commands.append(command(b"AUTH", username.encode(), password.encode()) if username
                        else command(b"AUTH", password.encode()))
    if settings.client_name:
        commands.append(command(b"CLIENT", b"SETNAME", settings.client_name.encode()))
    commands.append(command(b"PING"))
    return commands


async def dial(settings, protocol_factory) -> tuple[asyncio.Transport, asyncio.Protocol]:
    """Open a connection to the server of `settings` (`settings_of`) with
    `protocol_factory`'s protocol; raises OSError (refused, unreachable, a TLS handshake
    refused) or TimeoutError (no answer within its connect timeout)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(settings.socket_connect_timeout or CONNECT_SECONDS):
        if isinstance(settings, UnixDomainSocketConnection):
            return await loop.create_unix_connection(protocol_factory, settings.path)
        tls = settings.ssl_context.get() if isinstance(settings, SSLConnection) else None
        transport, protocol = await loop.create_connection(
            protocol_factory, settings.host, settings.port, ssl=tls)
    sock = transport.get_extra_info("socket")
    if sock is not None and settings.socket_keepalive:  # as redis-py's (asyncio: NODELAY)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for option, value in settings.socket_keepalive_options.items():
                sock.setsockopt(socket.SOL_TCP, option, value)
        except (OSError, TypeError):
            transport.close()
            raise
    return transport, protocol
