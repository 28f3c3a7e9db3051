"""`POST /v1/chat/completions`: admit the caller (the API keys, rate limits and quotas of
/v1/responses), validate the body, subscribe to the run's events, send the run (the run
queue and dispatcher of responses), and relay its events (relay.py).

Like `POST /v1/responses`, it runs on the event loop and reads no database when the key
and the tenant's limits are remembered; otherwise admission goes to a database thread.
"""
import asyncio
import os
import time
from functools import partial

from accounting import ratelimit
from observability.request_context import bind_request_id
from responses_app.api.parsers import parse_json
from responses_app.api.stream_views import django_response, request_body
from responses_app.api.streaming import cancel_abandoned, released, withdrawn
from responses_app.auth import remembered_principal, resolve_api_key
from responses_app.bus import event_bus
from responses_app.db_threads import run_db
from responses_app.delivery.dispatch import dispatcher

from . import relay
from .jobs import ChatJob
from .request import parse_chat_create

CLIENT_CLOSED = 499


def new_completion_id() -> str:
    return "chatcmpl-" + os.urandom(16).hex()


async def create(authorization: str | None, body: bytes, exchange):
    """(the job, the subscription to its events): admitted, validated and sent."""
    principal = remembered_principal(authorization)
    if principal is not None and ratelimit.admits_without_io(principal):
        admission = _admission(principal, body, exchange)
    else:
        principal, admission = await run_db(_admit, authorization, body, exchange)
    subscription, sent = None, False
    try:
        create = parse_chat_create(parse_json(body))  # the one body parser
        now = time.time()
        job = ChatJob(
            id=new_completion_id(), tenant_id=principal.tenant.id, model=create.model,
            created=int(now), created_at=now, stream=create.stream, store=create.store,
            include_usage=create.include_usage, metadata=create.metadata,
            messages=create.messages, body=create.body,
            client_function_names=create.client_function_names,
            context={"request_id": exchange.request_id, **admission.run_context()})
        subscription = await event_bus().subscribe(job.id)
        queued = await dispatcher().send(job)
        sent = True
        # its client may give up before a worker starts it (relay.first_entry)
        subscription.withdraw = partial(withdrawn, partial(dispatcher().withdraw, queued),
                                        admission)
    finally:
        if not sent:
            if subscription is not None:
                subscription.close()
            await released(admission)  # no run will settle it
    return job, subscription


def _admit(authorization, body: bytes, exchange):
    bind_request_id(exchange.request_id)
    principal = resolve_api_key(authorization)
    return principal, _admission(principal, body, exchange)


def _admission(principal, body: bytes, exchange):
    admission = ratelimit.admit(principal, tokens=ratelimit.estimate_tokens(body), run=True)
    exchange.headers.update(admission.headers)
    return admission


async def create_chat_completion(request):
    """The async view of `POST /v1/chat/completions`."""
    exchange = request.exchange
    job, subscription = await create(request.headers.get("Authorization"), request_body(request),
                                     exchange)
    abandoned = None if job.store else partial(cancel_abandoned, job.id)
    if job.stream:
        return django_response(await relay.stream_reply(subscription, abandoned))
    try:
        return django_response(await relay.final_reply(subscription))
    except asyncio.CancelledError:  # the client left while the run went on
        if abandoned is not None:
            await abandoned()
        exchange.answered(request.resolver_match.route, request.path, CLIENT_CLOSED)
        raise
