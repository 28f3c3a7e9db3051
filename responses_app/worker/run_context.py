"""A run's context phase, before its first upstream call: server-side compaction when its
input crosses the `context_management` threshold or ends with a `compaction_trigger` item (the compaction item streams first, in
OpenAI's events), then the fit into the route's context window (truncation or OpenAI's
400 `context_length_exceeded`). The decisions are responses_app.context's; here they run
off the event loop and their events go out. The summary is the run's own upstream call
(summary_call.py), on the run's task: a cancel or a steer closes it, and its usage is
counted once whichever way it ends (here when it completes, before anything else can
fail; cut_turn.py when it is cut). A compaction cut before its summary is closed with the
response's other open items (translation.compaction_events: unfinished, it stands for
nothing).

The counts (the threshold, the window, truncation's recounts) use the route's counter,
which may ask the upstream (`vllm`, `llamacpp`: its /tokenize) or read a tokenizer file:
one that fails (upstreams.token_counting.CountFailed) fails the run as an upstream's
failure does (a 502 `upstream_error`, or `response.failed` once the response is out),
not as a crash."""
from upstreams.token_counting import CountFailed

from ..create.client_tool_items import compaction_triggered
from ..context.compaction import compacted
from ..context.compaction_items import unfinished_compaction
from ..context.plan import count_tokens, measure, needs_context
from ..context.rendering import chat_request_for
from ..context.summary import SummaryFailed, summary_request
from ..context.window import ContextTooLong, fit
from .loop import blocking
from .summary_call import SummaryCall, stream_summary
from .upstream import UpstreamRejected, configured_retry


async def fitted_body(streaming) -> dict:
    """The chat body the run sends first (its job's, compacted and fitted as needed)."""
    job, route = streaming.job, streaming.route
    params = job.request["params"]
    body = job.chat.body
    triggered = compaction_triggered(job.input_items)
    if triggered:  # the client asked: compact first, whatever the input's size
        body = await _compacted(streaming, body)
    if not needs_context(route, params):
        return body
    measured = await _counting(measure, route, job.model, params, body)
    tokens = measured.tokens
    if measured.threshold is not None and tokens > measured.threshold and not triggered:
        body = await _compacted(streaming, body)
        tokens = await _counting(count_tokens, route, body)
    if measured.window is None:
        return body
    try:
        fitted = await _counting(fit, route, body, tokens, measured.window, params)
    except ContextTooLong as exc:
        raise UpstreamRejected(str(exc), status=400, type="invalid_request_error",
                               param="input", code="context_length_exceeded") from None
    return fitted.body


async def _counting(function, *args):
    """`function(*args)`, which counts tokens with the route's counter, on a thread; the
    counter's failure an upstream's (502)."""
    try:
        return await blocking(function, *args)
    except CountFailed as exc:
        raise UpstreamRejected(f"The input tokens could not be counted: {exc}.", status=502,
                               code="upstream_error") from None


async def _compacted(streaming, body: dict) -> dict:
    """Compact first: the compaction item streams, then the body with its summary."""
    job, translator = streaming.job, streaming.translator
    if not streaming.started:
        await streaming.emit(translator.start(), urgent=False)
    events, item = translator.open_compaction(unfinished_compaction())
    await streaming.emit(events)
    call = streaming.summary = SummaryCall(summary_request(body))
    await stream_summary(streaming.route, call, configured_retry(), streaming.placement)
    job.upstream_replica = streaming.placement.replica
    streaming.summary = None  # it ended: its usage is counted at once, before anything that
    # may fail (a summary without content, a crash sealing it), with no await between, so
    # no cancel falls between its end and its count
    translator.count_call(call.usage)
    try:
        summary = call.summary()
    except SummaryFailed as exc:
        raise UpstreamRejected(str(exc), status=502, code="upstream_error") from None
    done = compacted(summary, call.usage, job.items)
    await streaming.emit(translator.compaction_done(item, done.item["encrypted_content"]))
    return chat_request_for(job.model, job.request, job.items + [item]).body
