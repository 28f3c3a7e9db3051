"""One run: claim the response, stream the upstream through the translator onto the bus,
store the result, then publish the terminal event.

`execute_run` is sync (Celery task thread or embedded dispatcher thread) and does the
database work itself; the streaming part runs on the shared run loop. A run that can be
cancelled (background, or store=false whose client left) watches for a cancel request:
its upstream call stops, what was produced is stored as `cancelled`, and the stream ends.
"""
import asyncio
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from mcp_tools.run_plan import mcp_run_plan
from mcp_tools.runner import McpToolLoop
from upstreams.retry_policy import RetryPolicy
from upstreams.routing import Route, route_for_model

from ..bus import StreamFenced, event_bus
from ..bus.entries import Entry, error_entry
from ..cancellation import cancellation
from ..errors import error_body
from ..ids import new_id
from ..reasoning_token import seal
from ..translation.sse import EventStamper
from ..translation.state_machine import ResponseTranslator, TranslatorOptions
from . import loop, result_store
from .heartbeat import worker_id
from .run_observer import observed_run
from .upstream import UpstreamRejected, UpstreamStreamFailed, open_chat_stream

log = logging.getLogger(__name__)

TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}
DELTA_EVENTS = {"response.output_text.delta", "response.refusal.delta",
                "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
                "response.function_call_arguments.delta"}


@dataclass
class Generated:
    """What the streaming part leaves for the sync part: the final object and last events."""

    resource: dict | None = None
    closing: list | None = None
    stamper: EventStamper | None = None
    rejected: UpstreamRejected | None = None
    fenced: bool = False
    cancelled: bool = False
    writer: object = None
    first_delta_at: float | None = None  # time.monotonic() when the first delta went out


def execute_run(response_id: str) -> None:
    job = result_store.claim_run(response_id, worker_id())
    if job is None:
        log.info("run %s already claimed or gone", response_id)
        return
    with observed_run(job) as run:  # request id in logs; limits and metrics when it ends
        _run_claimed(job, run)


def _run_claimed(job, run) -> None:
    response_id = job.response_id
    mcp_plan = mcp_run_plan(job)
    route = route_for_model(job.resource["model"])  # cached: no query per run
    connection.close()  # back to the pool while streaming; runs outnumber connections
    try:
        generated = run.generated = loop.run(_generate(job, route, mcp_plan))
    finally:
        if job.cancellable:
            cancellation().forget(response_id)
    writer = generated.writer
    if generated.fenced:
        return
    if generated.rejected is not None:
        result_store.discard_unstarted(job)
        run.ended()
        rejected = generated.rejected
        loop.run(writer.append(error_entry(rejected.status, rejected.body, rejected.headers)))
        return
    try:
        stored = result_store.store_result(job, generated.resource)
    except Exception:
        log.exception("storing %s failed", response_id)
        stored = True
        generated.resource["status"] = "failed"
        generated.resource["error"] = {"code": "server_error",
                                       "message": "The response could not be stored."}
        closing = [e for e in generated.closing if e["type"] not in TERMINAL_EVENTS]
        generated.closing = closing + [{"type": "response.failed",
                                        "response": generated.resource}]
    run.ended()  # before the terminal event: a follow-up finds its slot free
    if not stored:  # the watchdog failed it meanwhile and ended its stream
        log.warning("run %s ended after it was given up; its result is dropped", response_id)
        return
    first = generated.stamper.next_sequence_number
    data = generated.stamper.render(generated.closing)
    last = generated.stamper.next_sequence_number - 1
    loop.run(writer.append(Entry(first, last, data, end=True)))


def _retry_policy() -> RetryPolicy:
    return RetryPolicy(max_retries=settings.UPSTREAM_MAX_RETRIES,
                       max_wait=settings.UPSTREAM_RETRY_MAX_WAIT)


async def _generate(job, route: Route, mcp_plan=None) -> Generated:
    writer = event_bus().writer(job.response_id)
    reasoning = job.resource.get("reasoning") or {}
    translator = ResponseTranslator(job.resource, TranslatorOptions(
        ids=new_id,
        reasoning_as_summary=bool(reasoning.get("summary")),
        include_logprobs="message.output_text.logprobs" in job.include,
        function_names=job.chat.function_names,
        seal_reasoning=seal if "reasoning.encrypted_content" in job.include else None,
    ))
    stamper = EventStamper()
    result = Generated(resource=job.resource, stamper=stamper, writer=writer)

    async def emit(events, urgent=True):
        if events:
            first = stamper.next_sequence_number
            data = stamper.render(events)
            await writer.append(Entry(first, stamper.next_sequence_number - 1, data),
                                urgent=urgent)

    running = asyncio.ensure_future(_run_turns(job, route, mcp_plan, translator, stamper,
                                               writer, emit, result))
    watch = None
    if job.cancellable:
        def cancel():
            result.cancelled = True
            running.cancel()

        watch = await cancellation().watch(job.response_id, cancel)
    try:
        await running
        result.closing = translator.finish()
    except asyncio.CancelledError:
        if not result.cancelled:
            raise
        log.info("run %s cancelled", job.response_id)
        result.closing = translator.cancel()
    except UpstreamRejected as rejected:
        error = rejected.body["error"]
        if stamper.next_sequence_number == 0 and not job.background:
            result.rejected = rejected
        else:  # the response is visible already (background, MCP listing): it fails in it
            if stamper.next_sequence_number == 0:
                await emit(translator.start())
            code = "rate_limit_exceeded" if rejected.status == 429 else "server_error"
            result.closing = translator.fail(code, error["message"])
    except UpstreamStreamFailed as failure:
        log.warning("run %s failed mid-stream: %s", job.response_id, failure.message)
        result.closing = translator.fail(failure.code, failure.message)
    except StreamFenced:
        log.warning("run %s lost its event stream to another writer; stopping", job.response_id)
        result.fenced = True
        await writer.close()
    except Exception:
        log.exception("run %s crashed", job.response_id)
        if stamper.next_sequence_number == 0 and not job.background:
            result.rejected = UpstreamRejected(500, error_body(
                "The server had an error while processing your request.", "server_error",
                None, "server_error"))
        else:
            if stamper.next_sequence_number == 0:
                await writer.append(Entry(0, 1, stamper.render(translator.start())))
            result.closing = translator.fail(
                "server_error", "The server had an error while processing your request.")
    finally:
        if watch is not None:
            watch.close()
    return result


async def _run_turns(job, route, mcp_plan, translator, stamper, writer, emit, result) -> None:
    """The upstream turns of one response, up to (not including) its end: one turn, or with
    MCP tools, turns until the model stops calling them (see mcp_tools.runner)."""
    body = job.chat.body
    tools = None
    if mcp_plan is not None:
        tools = McpToolLoop(mcp_plan, job, translator, emit)
        await emit(translator.start(), urgent=False)
        body = await tools.prepare()
    while body is not None:
        await _stream_turn(route, translator, stamper, writer, body, result)
        if tools is None:
            break
        events, calls = translator.end_turn()
        await emit(events)
        body = await tools.after_turn(calls)


async def _stream_turn(route, translator, stamper, writer, body, result) -> None:
    """One upstream call, its chunks translated onto the bus (the response's start events
    go first, once the upstream accepted, unless they were sent already)."""
    async with open_chat_stream(route, body, settings.STREAM_BATCH_MS / 1000,
                                _retry_policy()) as batches:
        if stamper.next_sequence_number == 0:
            # not urgent: it usually travels with the first delta, which is
            await writer.append(Entry(0, 1, stamper.render(translator.start())))
        first_delta_sent = False
        async for chunks in batches:
            events = []
            for chunk in chunks:
                events += translator.feed(chunk)
            if not events:
                continue
            first = stamper.next_sequence_number
            data = stamper.render(events)
            urgent = not first_delta_sent and any(e["type"] in DELTA_EVENTS for e in events)
            if urgent:
                first_delta_sent = True
                if result.first_delta_at is None:
                    result.first_delta_at = time.monotonic()
            await writer.append(Entry(first, stamper.next_sequence_number - 1, data),
                                urgent=urgent)
