"""WebSocket mode when the web process stops: every open socket is closed with a close
frame (code 4503) and its `store: false` runs are stopped (nobody can read them after);
`store: true` runs go on in their workers and are stored.

Daphne does not do it by itself: on SIGTERM its shutdown step (Server.kill_all_applications)
reads `application_instance` of every connection it tracks and stops with a KeyError at the
first one that has none (an HTTP request whose application it has reaped, or the request a
WebSocket was upgraded from, until its once-a-second checker drops them), before it has
cancelled any consumer; where it does get to them, it cancels consumers without a close
frame and without their `disconnect`. Clients saw the TCP connection drop (1006).
So the process adds its own step to the reactor's shutdown, before Daphne's. 1001 ("going
away") and 1012 cannot be sent: Daphne closes through autobahn's `sendClose`, which lets a server send 1000 and
3000-4999 only; 4503 follows this front door's rule (4000 + the HTTP status: 503).
"""
import asyncio
import sys
import weakref

GOING_AWAY = 4503
SHUTDOWN_SECONDS = 10.0  # at most, for all sockets, before the reactor goes on stopping

OPEN: weakref.WeakSet = weakref.WeakSet()  # the process's open sockets (consumers)


async def close_all(code: int = GOING_AWAY) -> None:
    """Close every open socket with `code` and stop its unstored runs."""
    closing = [asyncio.ensure_future(socket.shut_down(code)) for socket in list(OPEN)]
    if closing:
        await asyncio.wait(closing, timeout=SHUTDOWN_SECONDS)


def install() -> None:
    """Under Daphne (Twisted's reactor imported): close_all before the reactor stops.
    Other ASGI servers close their WebSockets on shutdown themselves."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None:
        return
    from twisted.internet import defer

    reactor.addSystemEventTrigger(
        "before", "shutdown",
        lambda: defer.Deferred.fromFuture(asyncio.ensure_future(close_all())))
