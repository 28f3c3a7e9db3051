"""One run: claim the response, stream the upstream through the translator onto the bus,
store the result, then publish the terminal event.

A run is a coroutine on the process's run loop (`run_response`), so no thread waits while
it streams. Its result is stored from the loop (loop_rows.py, one statement on Postgres);
other database work (a claim reading the job and its history, an MCP plan) goes to the
loop's database threads, one hop each way. A run sent with its job (see dispatch.py)
claims from the loop too, and does not wait for its claim to call the upstream: the claim
is confirmed meanwhile, and the run publishes and stores nothing before it is (a run that
does not get it closes its upstream call at once and leaves no trace). `execute_run` is the sync entry (the Celery task, the embedded
dispatcher). A run that can be cancelled (background, or store=false whose client left)
watches for a cancel request: its upstream call stops, what was produced is stored as
`cancelled`, and the stream ends.
"""
import asyncio
import logging
import time
from dataclasses import dataclass

from django.conf import settings

from mcp_tools.run_plan import mcp_run_plan
from mcp_tools.runner import McpToolLoop
from observability.request_context import bind_request_id
from upstreams.retry_policy import RetryPolicy
from upstreams.routing import Route, remembered_route_for_model, route_for_model

from ..bus import StreamFenced, event_bus
from ..bus.entries import Entry, error_entry
from ..cancellation import cancellation
from .. import loop_rows
from ..errors import error_body
from ..ids import new_id
from ..jobs import Job
from ..reasoning_token import seal
from ..translation.sse import EventStamper
from ..translation.state_machine import ResponseTranslator, TranslatorOptions
from . import loop, result_store
from .heartbeat import worker_id
from .loop import blocking
from .run_observer import ObservedRun
from .upstream import UpstreamRejected, UpstreamStreamFailed, open_chat_stream

log = logging.getLogger(__name__)

TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}
DELTA_EVENTS = {"response.output_text.delta", "response.refusal.delta",
                "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
                "response.function_call_arguments.delta"}


@dataclass
class Generated:
    """What the streaming part leaves for the storing part: the final object and last events."""

    resource: dict | None = None
    closing: list | None = None
    stamper: EventStamper | None = None
    rejected: UpstreamRejected | None = None
    fenced: bool = False
    cancelled: bool = False
    writer: object = None
    first_delta_at: float | None = None  # time.monotonic() when the first delta went out
    unclaimed: bool = False  # the run never owned the response (another has it, or gone)


class RunNotClaimed(Exception):
    """The run was started before its claim was confirmed, and the claim failed."""


class _Claim:
    """The claim of a run that calls the upstream meanwhile (a task on the run loop)."""

    def __init__(self, response_id: str):
        self.response_id = response_id
        self.task = asyncio.ensure_future(loop_rows.claim(response_id, worker_id(), blocking))
        self.task.add_done_callback(self._log_failure)

    def _log_failure(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("run %s could not claim its response: %s", self.response_id,
                        task.exception())

    async def owned(self) -> bool:
        """Whether the run owns the response (waits for the claim if it is not done)."""
        try:
            return await self.task
        except Exception:  # the database is away: the row stays queued, for the watchdog
            return False

    def on_refused(self, callback) -> None:
        """Call `callback()` on the loop as soon as the claim fails."""
        def done(task: asyncio.Task) -> None:
            if task.cancelled() or task.exception() is not None or not task.result():
                callback()

        self.task.add_done_callback(done)


class _ClaimedWriter:
    """The run's bus writer, gated by its claim: nothing is published before it is confirmed."""

    def __init__(self, writer, claim: _Claim):
        self.writer, self.claim = writer, claim

    async def append(self, entry: Entry, urgent: bool = False) -> None:
        if not await self.claim.owned():  # a confirmed claim is a done task: no wait
            raise RunNotClaimed(self.claim.response_id)
        await self.writer.append(entry, urgent)

    async def close(self) -> None:
        await self.writer.close()


def execute_run(response_id: str, job: Job | None = None) -> None:
    """Run a response from a sync caller, on the run loop, and wait for it to end."""
    loop.run(run_response(response_id, job))


async def run_response(response_id: str, carried: Job | None = None) -> None:
    """Run the response `response_id`; `job_columns` are its row's columns when its message
    carried them (a foreground run that reads nothing: no history, no MCP tools)."""
    if carried is None:
        claimed = await blocking(_claim, response_id)
        if claimed is None:
            log.info("run %s already claimed or gone", response_id)
            return
        job, route, mcp_plan = claimed
        claim = None
    else:
        claim = _Claim(response_id)
        job = result_store.job_of(response_id, carried.columns())
        route = (remembered_route_for_model(job.model)
                 or await blocking(route_for_model, job.model))
        mcp_plan = None
    run = ObservedRun(job)
    bind_request_id(job.context.get("request_id"))  # this task's log lines carry it
    try:
        await _run_claimed(job, run, route, mcp_plan, claim)
    finally:
        unclaimed = run.generated is not None and run.generated.unclaimed
        if not run.settled and not unclaimed:
            # it ended without reaching the store path (fenced, crashed)
            await _ended(run)


def _claim(response_id: str):
    """The claimed job with its upstream route and MCP plan, or None (database thread)."""
    job = result_store.claim_run(response_id, worker_id())
    if job is None:
        return None
    return job, route_for_model(job.resource["model"]), mcp_run_plan(job)


async def _run_claimed(job, run: ObservedRun, route: Route, mcp_plan,
                       claim: _Claim | None) -> None:
    response_id = job.response_id
    try:
        generated = run.generated = await _generate(job, route, mcp_plan, claim)
    finally:
        if job.cancellable:
            cancellation().forget(response_id)
    writer = generated.writer
    if claim is not None and not await claim.owned():
        generated.unclaimed = True
    if generated.unclaimed:
        log.info("run %s: another run has its response, or it is gone; stopped",
                 response_id)
        return
    if generated.fenced:
        return
    if generated.rejected is not None:
        await blocking(_discard, job, run)
        rejected = generated.rejected
        await writer.append(error_entry(rejected.status, rejected.body, rejected.headers))
        return
    if not await _store(job, run, generated):
        # the watchdog failed it meanwhile and ended its stream
        log.warning("run %s ended after it was given up; its result is dropped", response_id)
        return
    first = generated.stamper.next_sequence_number
    data = generated.stamper.render(generated.closing)
    last = generated.stamper.next_sequence_number - 1
    await writer.append(Entry(first, last, data, end=True))


def _discard(job, run: ObservedRun) -> None:
    """A run rejected before it started leaves nothing behind (database thread)."""
    result_store.discard_unstarted(job)
    run.ended()


async def _store(job, run: ObservedRun, generated: Generated) -> bool:
    """Store the result and settle the run, before the terminal event is published: a
    follow-up finds the response and its slot free. False if the run no longer owns the
    response."""
    try:
        stored = await loop_rows.store_result(job, generated.resource, blocking)
    except Exception:
        log.exception("storing %s failed", job.response_id)
        stored = True
        generated.resource["status"] = "failed"
        generated.resource["error"] = {"code": "server_error",
                                       "message": "The response could not be stored."}
        closing = [e for e in generated.closing if e["type"] not in TERMINAL_EVENTS]
        generated.closing = closing + [{"type": "response.failed",
                                        "response": generated.resource}]
    await _ended(run)
    return stored


async def _ended(run: ObservedRun) -> None:
    """Settle the run and record it: on the loop, unless its admission is settled with the
    limiter (a blocking Redis call)."""
    if run.job.context.get("limited"):
        await blocking(run.ended)
    else:
        run.ended()


def _retry_policy() -> RetryPolicy:
    return RetryPolicy(max_retries=settings.UPSTREAM_MAX_RETRIES,
                       max_wait=settings.UPSTREAM_RETRY_MAX_WAIT)


async def _generate(job, route: Route, mcp_plan=None, claim: _Claim | None = None) -> Generated:
    writer = event_bus().writer(job.response_id)
    if claim is not None:
        writer = _ClaimedWriter(writer, claim)
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
    if claim is not None:
        def unclaimed():
            result.unclaimed = True
            running.cancel()  # its upstream call is closed

        claim.on_refused(unclaimed)
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
        if result.unclaimed:
            return result
        if not result.cancelled:
            raise
        log.info("run %s cancelled", job.response_id)
        result.closing = translator.cancel()
    except RunNotClaimed:
        result.unclaimed = True
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
