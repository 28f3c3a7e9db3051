"""What every front door does to start or follow a response, whatever its transport.

The HTTP views (stream_views.py) use it for `POST /v1/responses` and
`GET /v1/responses/{id}?stream=true`; a WebSocket consumer takes the same calls for its
`response.create` frames: admit the caller (API key, rate limits, quotas), validate the
create body, send the run (writing the row first unless the run writes it), subscribe to the run's events before it can
publish any, and stop a `store: false` run nobody is left to read. The subscription is then
relayed (relay.py for HTTP). A front passes an `exchange`: the request id, and the headers
its answer carries (admission adds the rate-limit headers).

Nothing here waits for a database thread when it need not: a request whose key and limits
are remembered and that reads nothing stored (no chain, conversation or MCP tools) is
admitted and validated on the event loop (a web_search tool's backend too, from the
table in memory: hosted_tools.backend_table), and its row is written from there
(lifecycle/database.py); everything else goes to the database threads (db_threads.py).
"""
import logging
import time
from functools import partial

from django.conf import settings

from accounting import ratelimit
from hosted_tools.backend_table import backend_table, remembered_backends
from hosted_tools.dropped import dropped_tools_header
from hosted_tools.tenant_tools import asks_web_search, settle_web_search
from observability.request_context import bind_request_id

from .. import services
from ..auth import remembered_principal, resolve_api_key
from ..bus import event_bus
from ..delivery.cancellation import STEERED, cancellation
from ..create.request import parse_create_request
from ..db_threads import run_db
from ..errors import InvalidRequest, NotFound
from .parsers import parse_json
from ..models import TERMINAL_STATUSES, StoredResponse

log = logging.getLogger(__name__)

MAX_SEQUENCE_NUMBER = 2**63 - 1
# A run that ended this recently may not have published its end yet: follow, don't refuse.
JUST_ENDED_SECONDS = 10


async def create(authorization: str | None, body: bytes, exchange,
                 history: list | None = None, generate: bool = True,
                 steerable: bool = False):
    """Admit, validate and create the response: its row, its run sent, and (unless it is a
    plain background response) its events subscribed to before the run can publish any.
    Returns (the job, which is its row; the create request; the subscription or None).
    `history`: the items `previous_response_id` stands for, when the front door holds them;
    `generate=False` (a WebSocket's warm-up): admitted, validated and prepared, never run;
    `steerable`: its run obeys `steer_running` (a WebSocket's `response.steer`)."""
    if _admits_without_io(authorization):
        principal, admission = _admit(authorization, body, exchange)
    else:
        principal, admission = await run_db(_admit, authorization, body, exchange)
    subscription, started = None, False
    try:
        request = parse_body(body)
        if asks_web_search(request):
            await _settle_web_search(request, principal.tenant.id)
        request.history = history
        exchange.headers.update(dropped_tools_header(request.dropped_tools))
        context = {"request_id": exchange.request_id, **admission.run_context()}
        if steerable:
            context["steerable"] = True
        if services.needs_lookups(request):
            job = await run_db(_prepare, principal.tenant, request, context)
        else:
            job = services.response_prepare(principal.tenant, request, context)
        if not generate:
            return job, request, None
        if request.stream or not request.background:
            subscription = await event_bus().subscribe(job.id)
        sent = await services.response_start(job)
        started = True
        if subscription is not None:  # its client may give up before a worker starts it
            subscription.withdraw = partial(
                withdrawn, partial(services.response_withdraw, job, sent), admission)
    finally:
        if not started:
            if subscription is not None:
                subscription.close()
            await released(admission)
    return job, request, subscription


async def withdrawn(take_back, admission) -> bool:
    """A run its client gave up on (relay.first_entry: no worker started it in time) taken
    back by `take_back()` if no worker took it yet, and then its admission released;
    whether it was taken back."""
    if not await take_back():
        return False
    await released(admission)
    return True


async def released(admission) -> None:
    """The admission of a request whose run will never settle it, released (its run slot
    and its estimate given back)."""
    if admission.limited:
        await run_db(ratelimit.cancel, admission)


def parse_body(body: bytes):
    """The create request of a JSON body (InvalidRequest if it is not one)."""
    return parse_create_request(parse_json(body))


async def _settle_web_search(request, tenant_id: int) -> None:
    """Keep the web search tool if a backend serves the tenant (the backends table read on
    a database thread only when the one in memory is stale)."""
    table = remembered_backends() or await run_db(backend_table)
    settle_web_search(request, table.for_tenant(tenant_id) is not None)


def _admits_without_io(authorization) -> bool:
    """A key accepted lately, of a tenant without limits: admitting it reads nothing."""
    principal = remembered_principal(authorization)
    return principal is not None and ratelimit.admits_without_io(principal)


def _admit(authorization, body, exchange):
    """The caller and its admission (on a database thread unless it reads nothing)."""
    bind_request_id(exchange.request_id)  # this thread logs for this request
    principal = resolve_api_key(authorization)
    admission = ratelimit.admit(principal, tokens=ratelimit.estimate_tokens(body), run=True)
    exchange.headers.update(admission.headers)
    return principal, admission


def _prepare(tenant, request, context):
    bind_request_id(context["request_id"])
    return services.response_prepare(tenant, request, context)


async def cancel_abandoned(response_id: str) -> None:
    """A store=false run whose client left: nobody can ever read the rest, so stop it."""
    try:
        await run_db(cancellation().request_cancel, response_id)
    except Exception as exc:
        log.warning("could not cancel abandoned run %s: %s", response_id, exc)


async def steer_running(response_id: str) -> None:
    """A WebSocket's `response.steer`: the run stops its upstream generation and ends
    `incomplete` (reason `steered`) with what it produced (run_streaming.py)."""
    try:
        await run_db(cancellation().request_cancel, response_id, STEERED)
    except Exception as exc:  # the response goes on; its successor follows its end
        log.warning("could not stop steered run %s: %s", response_id, exc)


async def follow(authorization: str | None, response_id: str, after: int, exchange):
    """A subscription replaying a stored response's events after `after`, then following
    live ones; NotFound if it is not the caller's or its events are no longer kept."""
    status, completed_at = await run_db(_resume_check, authorization, response_id, exchange)
    just_ended = min(JUST_ENDED_SECONDS, settings.EVENT_RETENTION_SECONDS / 2)
    ended_long_ago = status in TERMINAL_STATUSES and time.time() - completed_at > just_ended
    if ended_long_ago and not await event_bus().retained(response_id):
        raise NotFound(
            f"The event stream of response '{response_id}' is no longer retained (events "
            f"are kept {settings.EVENT_RETENTION_SECONDS} s after a response ends); "
            "retrieve the response without stream=true.", code="event_stream_expired")
    return await event_bus().subscribe(response_id, after)


def starting_after(value: str | None) -> int:
    """The `starting_after` parameter: a sequence number, or -1 (from the start). ASCII
    digits only, and at most MAX_SEQUENCE_NUMBER (a Redis stream id is 64 bits)."""
    value = "-1" if value is None else value
    digits = value[1:] if value.startswith("-") else value
    number = digits.isascii() and digits.isdigit() and len(digits) <= 19  # 2**63 has 19
    after = int(value) if number else -2
    if not -1 <= after <= MAX_SEQUENCE_NUMBER:
        raise InvalidRequest(f"'starting_after' must be a sequence number (an integer from 0 "
                             f"to {MAX_SEQUENCE_NUMBER}).",
                             param="starting_after", code="invalid_value")
    return after


def _resume_check(authorization, response_id: str, exchange) -> tuple[str, float]:
    bind_request_id(exchange.request_id)
    principal = resolve_api_key(authorization)
    exchange.headers.update(ratelimit.admit(principal).headers)
    row = (StoredResponse.objects.filter(id=response_id, tenant=principal.tenant, store=True)
           .only("status", "completed_at", "created_at").first())
    if row is None:
        raise NotFound(f"No response found with id '{response_id}'.")
    ended = row.completed_at or row.created_at
    return row.status, ended.timestamp()
