"""A run's streaming phase: the upstream's chunks translated into the response's events on
the bus, turn after turn when MCP or hosted tools are called (the tool loop:
mcp_tools.runner, with hosted_tools.loop),
until the response's end, which it leaves to the storing phase (run.py) as an `Ending`.

It stops early when its claim is refused (nothing of it is published), when its client
cancels it (background, or store=false whose client left: what was produced ends as
`cancelled`), when a WebSocket client steers it (what was produced ends `incomplete` with
reason `steered`, unless a call the client must answer is streaming: that turn ends the
response, which then waits for the call's output), or when another writer took its event
stream (fenced). Stopping cancels the task that reads the upstream, which closes its
connection (the upstream sees the disconnect and stops generating).
"""
import asyncio
import logging
import time
from datetime import datetime, timezone

from django.conf import settings

from hosted_tools.loop import HostedTools
from mcp_tools.run_plan import McpRunPlan
from mcp_tools.runner import McpToolLoop
from upstreams import pool
from upstreams.replicas import Placement, item_keys

from ..bus import StreamFenced, event_bus
from ..bus.entries import stamped_entry
from ..delivery.cancellation import STEERED, cancellation
from ..errors import CRASHED
from ..ids import new_id
from ..reasoning_token import seal
from ..translation.phase import phase_wanted
from ..translation.numbering import EventStamper
from ..translation.compaction_events import CompactingTranslator
from ..translation.state_machine import TranslatorOptions
from .run_claim import Claim, RunNotClaimed
from .run_ending import Ending, crash_before_anything
from .cut_turn import CutTurn, close_cut_turn
from .run_context import fitted_body
from .chunk_batches import SHAPE_ERRORS, malformed_or_raise
from .summary_call import SummaryCall
from .text_lane import run_lane
from .upstream import UpstreamRejected, UpstreamStreamFailed, configured_retry, open_chat_stream
from .upstream_span import chat_span

log = logging.getLogger(__name__)

DELTA_EVENTS = {"response.output_text.delta", "response.refusal.delta",
                "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
                "response.function_call_arguments.delta",
                "response.custom_tool_call_input.delta"}


class Streaming:
    def __init__(self, job, route, mcp_plan, claim: Claim):
        self.job, self.route, self.mcp_plan, self.claim = job, route, mcp_plan, claim
        self.bus_writer = event_bus().writer(job.id)
        self.writer = claim.gate(self.bus_writer)  # nothing published before it is claimed
        self.translator = CompactingTranslator(job.resource, TranslatorOptions(
            ids=new_id,
            reasoning_as_summary=bool((job.resource.get("reasoning") or {}).get("summary")),
            include_logprobs="message.output_text.logprobs" in job.include,
            function_names=job.chat.function_names,
            custom_tools=job.chat.custom_tools,
            client_tools=job.chat.client_tools,
            phase=phase_wanted(job.model, settings.OUTPUT_PHASE_MODELS, job.items),
            seal_reasoning=seal if "reasoning.encrypted_content" in job.include else None,
        ))
        self.stamper = EventStamper()
        self.placement = Placement.for_run(job.id, job.previous_response_id, job.conversation_id,
                                           [i["id"] for i in job.input_items if i.get("id")])
        self.first_delta_at: float | None = None  # time.monotonic() of the first delta
        self.first_delta_clock: datetime | None = None  # its wall-clock time (stored)
        self.stopped: str | None = None  # "unclaimed", "cancelled" or "steered"
        self.turn: CutTurn | None = None  # the upstream call in progress (cut_turn.py)
        self.summary: SummaryCall | None = None  # a compaction's summary call in progress

    async def emit(self, events: list, urgent: bool = True, soon: bool = False) -> None:
        """Publish `events`: urgent (sent at once, and waited for), soon (sent at once), or
        gathered with what follows under load."""
        if events:
            await self.writer.append(stamped_entry(self.stamper, events), urgent=urgent,
                                     soon=soon)

    async def run(self) -> Ending:
        running = asyncio.ensure_future(self._turns())
        self.claim.on_refused(lambda: self._stop("unclaimed", running))
        watch = None
        try:
            if self.job.cancellable:  # failing (Redis away), the run crashes, as below
                watch = await cancellation().watch(self.job.id,
                                                   lambda why: self._stop(why, running))
            await running
            closing = self.translator.finish()
            self._remember_output_items()
            return Ending("finished", closing)
        except asyncio.CancelledError:
            if self.stopped is None:
                raise
            if self.stopped == "unclaimed":
                return Ending("unclaimed")
            if self.stopped == STEERED:
                log.info("run %s steered", self.job.id)
                return await self._steered()
            log.info("run %s cancelled", self.job.id)
            return Ending("finished", await close_cut_turn(self) + self.translator.cancel())
        except RunNotClaimed:
            return Ending("unclaimed")
        except UpstreamRejected as rejected:
            return await self._rejected(rejected)
        except UpstreamStreamFailed as failure:
            log.warning("run %s failed mid-stream: %s", self.job.id, failure.message)
            return Ending("finished", await close_cut_turn(self)
                          + self.translator.fail(failure.code, failure.message))
        except StreamFenced:
            log.warning("run %s lost its event stream to another writer; stopping", self.job.id)
            await self.writer.close()
            return Ending("fenced")
        except Exception:
            log.exception("run %s crashed", self.job.id)
            running.cancel()  # done, unless its cancellation watch failed: stopped then
            await asyncio.wait((running,))
            return await self._crashed()
        finally:
            if watch is not None:
                watch.close()
            if self.job.cancellable:
                cancellation().forget(self.job.id)

    def _stop(self, why: str, running: asyncio.Future) -> None:
        if why == STEERED and self.translator.streams_client_call:
            return  # not cut: the response ends with the call, and waits for its output
        self.stopped = self.stopped or why
        running.cancel()  # its upstream call is closed

    async def _steered(self) -> Ending:
        """Steered: the response ends `incomplete` with what it produced so far."""
        if not self.started:
            await self.emit(self.translator.start(), urgent=False)
        closing = await close_cut_turn(self) + self.translator.finish(STEERED)
        self._remember_output_items()
        return Ending("finished", closing)

    @property
    def started(self) -> bool:
        """Whether the response's first events are out (it is visible to its client)."""
        return self.stamper.next_sequence_number > 0

    @property
    def untouched(self) -> bool:
        """Whether nothing of the run is out, nor spent (no upstream call answered)."""
        return not self.started and self.turn is None and self.summary is None

    async def _rejected(self, rejected: UpstreamRejected) -> Ending:
        if not self.started and not self.job.background:
            return Ending("rejected", rejected=rejected)
        # the response is visible already (background, MCP listing): it fails in it
        if not self.started:
            await self.emit(self.translator.start())
        code = "rate_limit_exceeded" if rejected.status == 429 else "server_error"
        if rejected.code == "context_length_exceeded":  # run_context.py
            code = "context_length_exceeded"
        return Ending("finished", self.translator.fail(code, rejected.message))

    async def _crashed(self) -> Ending:
        """The run's own bug: it fails, its cut call counted (cut_turn.py), unless it is
        `untouched` and its client waits for the answer (a 500, nothing stored). A client
        waiting for the whole answer gets a failure stored so as a 500 too (api/relay.py)."""
        if self.untouched and not self.job.background:
            return crash_before_anything()
        if not self.started:
            await self.emit(self.translator.start(), urgent=False)
        return Ending("finished", await close_cut_turn(self)
                      + self.translator.fail("server_error", CRASHED))

    async def _turns(self) -> None:
        """The upstream turns of one response, up to (not including) its end: one turn, or
        with MCP tools, turns until the model stops calling them. A job that could not be
        prepared (run_job.unprepared) fails here, before anything: the run's crash."""
        if self.job.failure is not None:
            raise self.job.failure
        body = await fitted_body(self)
        tools = None
        hosted = HostedTools(self.job, self.translator, self.emit)  # web and file search
        if self.mcp_plan is not None or hosted:
            tools = McpToolLoop(self.mcp_plan or McpRunPlan(), self.job, self.translator,
                                self.emit, hosted or None)
            await self.emit(self.translator.start(), urgent=False)
            body = await tools.prepare()
        while body is not None:
            await self._turn(body)
            if tools is None:
                break
            events, calls = self.translator.end_turn()
            await self.emit(events)
            body = await tools.after_turn(calls)

    async def _turn(self, body: dict) -> None:
        """One upstream call, its chunks translated onto the bus (the response's start events
        go first, once the upstream accepted, unless they were sent already)."""
        with chat_span(self.route.base_url, body) as observer:
            async with open_chat_stream(self.route, body, settings.STREAM_BATCH_MS / 1000,
                                        configured_retry(), self.placement) as batches:
                # answered: its tokens are spent from here, cut or not (counted: cut_turn.py)
                self.turn = CutTurn(body, len(self.translator.response["output"]))
                self.job.upstream_replica = self.placement.replica
                if observer is not None:
                    observer.placed(self.placement)
                    batches = observer.batches(batches)
                await self._translated(batches)
        self.turn = None

    async def _translated(self, batches) -> None:
        """The turn's chunk batches translated onto the bus. Once the first delta is out,
        the rest are translated as they are read (`push`: no wake-up of this task per
        read), unless the batches cannot be pushed (observed by a trace span)."""
        if not self.started:  # not urgent: it usually travels with the first delta
            await self.emit(self.translator.start(), urgent=False)
        first_delta_sent = False
        push = getattr(batches, "push", None)
        feed = self.translator.feed
        async for chunks in batches:
            events = []
            try:
                for chunk in chunks:
                    feed(chunk, events)
            except SHAPE_ERRORS as error:  # what came before the chunk goes out first
                await self.emit(events, urgent=False)
                raise malformed_or_raise(chunk, error) from None
            first = None if first_delta_sent else _first_delta(events)
            if first is None:
                await self.emit(events, urgent=False)
                continue
            first_delta_sent = True
            if self.first_delta_at is None:
                self.first_delta_at = time.monotonic()
                self.first_delta_clock = datetime.now(timezone.utc)
            await self._first_delta_out(events, first)
            if push is not None:
                await push(self._translated_now, run_lane(self))  # text_lane.py
                return

    def _translated_now(self, chunks: list) -> None:
        """One read's chunks translated and put on the bus, not waited for (as `emit`'s
        non-urgent entries; called from the upstream connection's read callback). Nothing
        once the run is stopping: its task, cancelled, has not run yet."""
        if self.stopped is not None:
            return
        feed = self.translator.feed
        events = []
        try:
            for chunk in chunks:
                feed(chunk, events)
        except SHAPE_ERRORS as error:  # what came before the chunk goes out first
            if events:
                self.writer.put(stamped_entry(self.stamper, events))
            raise malformed_or_raise(chunk, error) from None
        if events:
            self.writer.put(stamped_entry(self.stamper, events))

    async def _first_delta_out(self, events: list, first: int) -> None:
        """The first delta goes in a flush of its own (its client waits for it), written to
        Redis before the run goes on; the rest of its batch in the next flush. The run
        waits for neither acknowledgement (waiting for the first, it would idle for the
        round trip, and its end would come later)."""
        await self.emit(events[:first + 1], urgent=False, soon=True)
        await asyncio.sleep(0)  # the flusher takes it alone, and writes it (redis_codec)
        await self.emit(events[first + 1:], urgent=False, soon=True)

    def _remember_output_items(self) -> None:
        """A stored response's last output item may be referenced by a later request
        (`item_reference`, without `previous_response_id`: the Vercel AI SDK): that
        chain's replica is this one."""
        if self.job.store and self.placement.replica:
            ids = [item["id"] for item in self.job.resource.get("output") or ()
                   if item.get("id")]
            pool.remember_soon(self.route, item_keys(ids[-1:]), self.placement.replica)


def _first_delta(events: list) -> int | None:
    """The index of the first delta event among `events`, if any."""
    for index, event in enumerate(events):
        if event["type"] in DELTA_EVENTS:
            return index
    return None
