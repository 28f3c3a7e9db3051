"""The compaction summary's upstream call (context/summary.py's request), made as a run's
turns are: streamed through open_chat_stream with the route's retry policy, the run's
replica placement (its chain's replica) and the route's concurrency limit, on the run's
task, so a cancel or a steer closes its connection at once (the upstream sees the
disconnect and stops generating). The summary is its streamed content joined and stripped,
what the message of a non-streamed answer held.

Its usage is counted once, as a turn's is (worker/cut_turn.py): the usage chunk when it
came; cut after the upstream answered (a cancel, a steer, a stream broken mid-way) before
that chunk, its tokens counted by the route's counter (context.cut_usage) on the request
and the text it had streamed; cut before (waiting for a slot, a retry), nothing. A chunk
off shape fails it as a malformed chunk fails a turn (chunk_batches.malformed_or_raise).

`POST /v1/responses/compact` makes the same call on the run loop (`summarize`): the same
request, limit and replicas.
"""
from dataclasses import dataclass, field

from upstreams.replicas import Placement
from upstreams.retry_policy import RetryPolicy
from upstreams.routing import Route

from ..context.cut_usage import counted_usage
from ..context.summary import SummaryFailed, summary_request
from ..translation.chunk_shape import usage_problem
from . import loop
from .chunk_batches import SHAPE_ERRORS, malformed_or_raise
from .upstream import UpstreamStreamFailed, configured_retry, open_chat_stream
from .upstream_span import chat_span


@dataclass
class SummaryCall:
    """The summary call in progress: its request, whether the upstream answered it, the
    content it streamed, its usage once reported."""
    body: dict
    answered: bool = False
    pieces: list[str] = field(default_factory=list)  # one per chunk with content
    usage: dict | None = None

    def summary(self) -> str:
        """The summary of a completed call (SummaryFailed if it streamed no content)."""
        if not self.pieces:
            raise SummaryFailed("The upstream model server failed to summarize: its answer "
                                "had no content.")
        return "".join(self.pieces).strip()


async def stream_summary(route: Route, call: SummaryCall, retry: RetryPolicy,
                         placement: Placement) -> None:
    """Make `call` to the upstream, to its end (its state kept in `call` as it streams)."""
    with chat_span(route.base_url, call.body) as observer:
        async with open_chat_stream(route, call.body, 0.0, retry, placement) as batches:
            call.answered = True  # its tokens are spent from here, cut or not
            if observer is not None:
                observer.placed(placement)
                batches = observer.batches(batches)
            async for chunks in batches:
                for chunk in chunks:
                    try:
                        _take(call, chunk)
                    except SHAPE_ERRORS as error:  # a chunk off shape: a malformed stream
                        raise malformed_or_raise(chunk, error) from None


def _take(call: SummaryCall, chunk: dict) -> None:
    """A chunk's content and usage into `call` (SHAPE_ERRORS if it is off shape)."""
    if chunk.get("usage"):
        problem = usage_problem(chunk["usage"])
        if problem is not None:
            raise TypeError(problem)
        call.usage = chunk["usage"]
    for choice in chunk.get("choices") or ():
        content = (choice.get("delta") or {}).get("content")
        if content is not None:
            if not isinstance(content, str):
                raise TypeError("content is not a string")
            call.pieces.append(content)


def spent_usage(route: Route, call: SummaryCall) -> dict | None:
    """The Chat Completions usage of a call that ended (completed or cut): the reported
    one, else counted if the upstream answered it, else None (nothing was spent). Sync:
    the route's counter may ask the upstream."""
    if call.usage is not None or not call.answered:
        return call.usage
    return counted_usage(route, call.body, "".join(call.pieces))


def summarize(route: Route, chat_body: dict) -> tuple[str, dict | None]:
    """(the summary, its call's usage) of the conversation in `chat_body`, from a sync
    caller (the compact endpoint), on the run loop."""
    return loop.run(_summarized(route, chat_body))


async def _summarized(route: Route, chat_body: dict) -> tuple[str, dict | None]:
    call = SummaryCall(summary_request(chat_body))
    try:
        await stream_summary(route, call, configured_retry(), Placement())
    except UpstreamStreamFailed as failure:
        raise SummaryFailed(f"The upstream model server failed while summarizing: "
                            f"{failure.message}") from None
    return call.summary(), call.usage
