"""One chat completion's run on the worker's run loop: its upstream turns (one, or with the
tenant's MCP tools, a tool loop), its chunks on the bus, then its storage and settlement.

Without MCP functions the upstream's chunks pass through as they come (their `id` and
`model` the completion's; the usage chunk only if the client asked for it). With them,
the text (content, reasoning, refusal) still streams as it comes, tool-call deltas are
held until the turn ends: a turn that called only MCP functions runs them (each call and
its outcome is a comment event) and the next turn follows; otherwise the client's calls
(MCP calls beside them are dropped, not run) and the finish reason close the completion.
After CHAT_MAX_TOOL_ITERATIONS turns that ran MCP calls the next turn is sent with
`tool_choice: "none"`; MCP calls the model still makes then are dropped.

A non-streaming client's run publishes a `started` comment when the upstream's first
chunks arrive, then only the final completion. The completion (if
`store`) and its usage are committed, and the admission settled, before the end is
published, so a GET made when the client has it finds it. A run that ends without its
completion (failed, or cancelled: its client left) is charged its calls all the same
(cut_call.py).
"""
import asyncio
import logging
import time

from django.conf import settings

from observability.request_context import bind_request_id
from responses_app.bus import StreamFenced, event_bus
from responses_app.bus.entries import failure_entry
from responses_app.delivery.cancellation import cancellation
from responses_app.errors import CRASHED, APIError, ServerError
from responses_app.lifecycle import settle
from responses_app.worker.chunk_batches import SHAPE_ERRORS, malformed_or_raise
from responses_app.worker.loop import blocking
from responses_app.worker.upstream import UpstreamRejected, UpstreamStreamFailed, open_chat_stream
from upstreams.retry_policy import RetryPolicy
from upstreams.routing import remembered_route_for_model, route_for_model

from ..events import ChatStamper, comment
from ..jobs import ChatJob
from . import forwarding
from .completion import Completion
from .cut_call import ChatCutCall, charge
from .mcp import ChatMcpTools, tenant_mcp_tools
from .store import store_completion

log = logging.getLogger(__name__)


async def run_chat(job: ChatJob, settled=None) -> None:
    """Run the chat completion `job` (`settled(True)`: its message may leave the queue)."""
    if settled is not None:
        settled(True)  # no claim to win: a resent message runs only if nothing was published
    if job.resent and await event_bus().retained(job.id):
        log.warning("chat run %s was given back after it started; not run again", job.id)
        return
    await ChatRun(job).run()


class ChatRun:
    def __init__(self, job: ChatJob):
        self.job = job
        self.writer = event_bus().writer(job.id)
        self.stamper = ChatStamper()
        self.completion = Completion(job.id, job.model, job.created)
        self.tools = ChatMcpTools({})
        self.role_sent = False
        self.first_sent = False
        self.used_tokens = 0
        self.cancelled = False
        self.route = None
        self.cut: ChatCutCall | None = None  # the upstream call in progress (cut_call.py)
        self.charged = False  # its usage committed (the completion's store, or `charge`)
        self.settled = self.ended = False  # its admission settled, its end published (tried)
        self.began = time.monotonic()

    @property
    def started(self) -> bool:
        return self.stamper.next_sequence_number > 0

    async def emit(self, events: list, end: bool = False) -> None:
        if not events and not end:
            return
        soon = not self.first_sent
        self.first_sent = True
        self.ended = self.ended or end
        await self.writer.append(self.stamper.entry(events, end), soon=soon)

    async def run(self) -> None:
        """The run, in its safety net: an exception escaping its own handling (our bug) ends
        it as a crash: its client answered (if not yet), then its admission settled."""
        try:
            bind_request_id(self.job.context.get("request_id"))
            await self._run()
        except Exception:
            log.exception("chat run %s crashed", self.job.id)
            try:
                if not self.ended:
                    await self._failed_end(ServerError(CRASHED))
            finally:
                await self._settled()

    async def _run(self) -> None:
        watch = None
        running = asyncio.ensure_future(self._turns())
        try:
            if not self.job.store:  # its client left: nobody can read the rest (the front asks)
                watch = await cancellation().watch(self.job.id, lambda _: self._cancel(running))
            await running
            await self._finish()
        except asyncio.CancelledError:
            if not self.cancelled:
                raise
            log.info("chat run %s cancelled (its client left)", self.job.id)
            await charge(self, "cancelled")
            await self._settled()
            await self.emit([], end=True)
        except UpstreamRejected as rejected:  # before the first turn, or a later one
            await charge(self, "failed")
            await self._failed(rejected)
        except UpstreamStreamFailed as failure:
            await charge(self, "failed")
            await self._failed(APIError(
                failure.message, status=504 if failure.code == "request_timeout" else 502,
                type="server_error", code=failure.code))
        except StreamFenced:
            log.warning("chat run %s lost its event stream to another writer", self.job.id)
            await self._settled()
        except Exception:
            log.exception("chat run %s crashed", self.job.id)
            running.cancel()  # done, unless its cancellation watch failed: stopped then
            await asyncio.wait((running,))
            await charge(self, "failed")
            await self._failed(ServerError(CRASHED))
        finally:
            if watch is not None:
                watch.close()
                cancellation().forget(self.job.id)
            usage = self.completion.usage or {}
            log.info("chat run %s ended", self.job.id, extra={
                "response_id": self.job.id, "model": self.job.model,
                "duration_ms": round((time.monotonic() - self.began) * 1000, 1),
                "input_tokens": usage.get("prompt_tokens"),
                "output_tokens": usage.get("completion_tokens")})

    def _cancel(self, running: asyncio.Future) -> None:
        self.cancelled = True
        running.cancel()

    async def _turns(self) -> None:
        job = self.job
        route = self.route = (remembered_route_for_model(job.model)
                              or await blocking(route_for_model, job.model))
        self.tools = await tenant_mcp_tools(job.tenant_id, job.client_function_names, blocking)
        body = dict(job.body)
        if self.tools:
            body["tools"] = list(body.get("tools") or ()) + self.tools.tools()
        messages = list(body["messages"])
        iterations = 0
        while True:
            limit_reached = bool(self.tools) and iterations >= settings.CHAT_MAX_TOOL_ITERATIONS
            turn = {**body, "messages": messages}
            if limit_reached:
                turn["tool_choice"] = "none"
                await self._comment(f"tool iteration limit reached ({iterations}): "
                                    "the model answers without tools")
            await self._turn(route, turn)
            self.completion.end_turn()
            calls = self.completion.calls()
            if (not self.tools or limit_reached or not calls
                    or not all(c["function"]["name"] in self.tools.functions for c in calls)):
                return
            iterations += 1
            messages.append({"role": "assistant", "content": self.completion.turn_content or None,
                             "tool_calls": calls})
            for call in calls:
                messages.append(await self._mcp_call(call))
            self.completion.turn()

    async def _turn(self, route, body: dict) -> None:
        retry = RetryPolicy(max_retries=settings.UPSTREAM_MAX_RETRIES,
                            max_wait=settings.UPSTREAM_RETRY_MAX_WAIT)
        async with open_chat_stream(route, body, settings.STREAM_BATCH_MS / 1000,
                                    retry) as batches:
            # answered: its tokens are spent from here, cut or not (counted: cut_call.py)
            self.cut = ChatCutCall.began(body, self.completion)
            await self._streamed(batches)
        self.cut = None

    async def _streamed(self, batches) -> None:
        """A turn's reads taken: pulled until the first entry is out, then pushed as they are
        read, a lone chunk of text by the lane (forwarding.py), if they can be pushed."""
        push = getattr(batches, "push", None)
        async for chunks in batches:
            if not self.job.stream and not self.started:
                # a client waiting for the whole completion learns that its run started
                # (the front waits for a first entry no longer than for a first byte)
                await self.emit([comment("started")])
            events = []
            try:
                self._taken(chunks, events)
            finally:  # a chunk off shape: what came before it goes out first
                await self.emit(events)
            if self.first_sent and push is not None:
                return await push(self._taken_now, forwarding.chat_lane(self))

    def _taken(self, chunks: list, events: list) -> None:
        """One read's chunks fed to the completion, the events the client gets of them
        added to `events`; a chunk off shape stops them with its failure (chunk_batches)."""
        try:
            for chunk in chunks:
                self.completion.feed(chunk)
                if self.job.stream:
                    forwarded = forwarding.forwarded(self, chunk)
                    if forwarded is not None:
                        events.append(forwarded)
        except SHAPE_ERRORS as error:
            raise malformed_or_raise(chunk, error) from None

    def _taken_now(self, chunks: list) -> None:
        """One read's chunks taken and their events put on the bus, not waited for (as
        `emit` does once the first entry is out; called from the upstream connection's read
        callback, `ChunkBatches.push`). Nothing once the run is cancelled: its task has not
        run yet. Issue 31 (2026-11-27, bench/README.md's "Round 2 (worker)"): the
        benchmark's chat worker 0.82-0.89x the CPU per completion (3 pairs, median 0.82x)."""
        if self.cancelled:
            return
        events = []
        try:
            self._taken(chunks, events)
        finally:
            if events:
                self.writer.put(self.stamper.entry(events))

    async def _mcp_call(self, call: dict) -> dict:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        await self._comment(f"mcp_call {name} {arguments}")
        output, ok = await self.tools.call(name, arguments)
        outcome = "completed" if ok else "failed"
        await self._comment(f"mcp_call {name} {outcome}: {output[:200]}")
        return {"role": "tool", "tool_call_id": call["id"], "content": output}

    async def _comment(self, text: str) -> None:
        if self.job.stream:
            await self.emit([comment(text)])

    async def _finish(self) -> None:
        """The closing chunks (with MCP tools), the completion stored, the end published."""
        events = []
        if self.tools:  # the client gets its own calls only
            kept = self.completion.keep_calls(set(self.job.client_function_names))
            if self.job.stream:
                events = self.completion.closing_chunks(kept, self.role_sent,
                                                        self.job.include_usage)
        final = self.completion.finished()
        self.used_tokens = await blocking(store_completion, self.job, final)
        self.charged = True
        await self._settled()
        await self.emit(events + [final], end=True)

    async def _failed(self, error: APIError) -> None:
        """End the run with `error`: its `{"error": ...}` event once the stream started
        (OpenAI streams errors that way), else the error entry the front answers with."""
        await self._settled()
        await self._failed_end(error)

    async def _failed_end(self, error: APIError) -> None:
        if self.started:
            return await self.emit([error.body], end=True)
        self.ended = True
        await self.writer.append(failure_entry(error))

    async def _settled(self) -> None:
        """Settle its admission, once (tried once: one that raised is not tried again)."""
        if not self.settled:
            self.settled = True
            if self.job.context.get("limited"):
                await blocking(settle, self.job.tenant_id, self.job.context, self.used_tokens)
