"""A WebSocket's connection-local state: its most recent response (of each of its streams,
`stream_id`), kept in memory so that a `store: false` chain continues on the same socket
without the client resending history; a stream can fork another stream's last response.

Only the last response of each stream is kept. One that was stored (`store: true`) is
continued from the database, as over HTTP; one that was not (`store: false`, or prepared with
`generate: false`) is continued from here: its items (input and output, after the history
it continued) become the next response's supplied history. A continuation that fails
evicts it; a socket that closes forgets it (a later `previous_response_id` naming it gets
`previous_response_not_found`, as OpenAI documents).
"""
from dataclasses import dataclass, field

from ..db_threads import run_db
from ..history import chain_items


@dataclass
class LastResponse:
    id: str
    stored: bool
    # Not stored: the stored response its chain starts from (read back when continued)...
    base: str | None = None
    # ...and the items after it, oldest first.
    items: list = field(default_factory=list)


class SocketState:
    """The last response of each of the socket's streams, and the history a continuation
    of one stands for."""

    def __init__(self, tenant_id: int):
        self.tenant_id = tenant_id
        self.last: dict[str | None, LastResponse] = {}  # by stream_id (None: the default)

    def continues(self, previous_response_id: str | None) -> LastResponse | None:
        """The cached unstored response this `previous_response_id` continues, or None
        (no continuation, a stored response, or one this socket does not hold)."""
        if not previous_response_id:
            return None
        for last in self.last.values():
            if last.id == previous_response_id and not last.stored:
                return last
        return None

    async def history(self, last: LastResponse) -> list:
        """The items `last` stands for as history (its stored base read back, if any)."""
        if last.base is None:
            return last.items
        base = await run_db(chain_items, self.tenant_id, last.base) or []
        return base + last.items

    def remember(self, stream_id: str | None, response_id: str, stored: bool,
                 continued: LastResponse | None, previous_response_id: str | None,
                 items: list) -> None:
        """A response that ended usable (completed, incomplete, or prepared): its stream's
        last. `items`: its own input and output; `continued`: the cached response it
        continued, if any (else `previous_response_id` names a stored one, or nothing)."""
        if stored:
            last = LastResponse(response_id, True)
        elif continued is not None:
            last = LastResponse(response_id, False, continued.base, continued.items + items)
        else:
            last = LastResponse(response_id, False, previous_response_id, list(items))
        self.last[stream_id] = last

    def evict(self, response_id: str | None) -> None:
        """A continuation of `response_id` failed: it is no longer continued from here."""
        for stream_id, last in list(self.last.items()):
            if last.id == response_id:
                del self.last[stream_id]
