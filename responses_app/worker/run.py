"""One run: claim the response, stream the upstream through the translator onto the bus,
store the result, then publish the terminal event.

`execute_run` is sync (Celery task thread or embedded dispatcher thread) and does the
database work itself; the streaming part runs on the shared run loop.
"""
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from upstreams.retry_policy import RetryPolicy
from upstreams.routing import Route, route_for_model

from ..bus import StreamFenced, event_bus
from ..bus.entries import Entry, error_entry
from ..errors import error_body
from ..ids import new_id
from ..reasoning_token import seal
from ..translation.sse import EventStamper
from ..translation.state_machine import ResponseTranslator, TranslatorOptions
from . import loop, result_store
from .upstream import UpstreamRejected, UpstreamStreamFailed, open_chat_stream

log = logging.getLogger(__name__)

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
    writer: object = None


def execute_run(response_id: str) -> None:
    job = result_store.claim_run(response_id)
    if job is None:
        log.info("run %s already claimed or gone", response_id)
        return
    route = route_for_model(job.resource["model"])  # cached: no query per run
    connection.close()  # back to the pool while streaming; runs outnumber connections
    generated = loop.run(_generate(job, route))
    writer = generated.writer
    if generated.fenced:
        return
    if generated.rejected is not None:
        result_store.discard_unstarted(job)
        rejected = generated.rejected
        loop.run(writer.append(error_entry(rejected.status, rejected.body, rejected.headers)))
        return
    try:
        result_store.store_result(job, generated.resource)
    except Exception:
        log.exception("storing %s failed", response_id)
        generated.resource["status"] = "failed"
        generated.resource["error"] = {"code": "server_error",
                                       "message": "The response could not be stored."}
        generated.closing[-1] = {"type": "response.failed", "response": generated.resource}
    data = generated.stamper.render(generated.closing)
    last = generated.stamper.next_sequence_number - 1
    loop.run(writer.append(Entry(last - len(generated.closing) + 1, last, data, end=True)))


def _retry_policy() -> RetryPolicy:
    return RetryPolicy(max_retries=settings.UPSTREAM_MAX_RETRIES,
                       max_wait=settings.UPSTREAM_RETRY_MAX_WAIT)


async def _generate(job, route: Route) -> Generated:
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
    try:
        async with open_chat_stream(route, job.chat.body, settings.STREAM_BATCH_MS / 1000,
                                    _retry_policy()) as batches:
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
                first_delta_sent = first_delta_sent or urgent
                await writer.append(Entry(first, stamper.next_sequence_number - 1, data),
                                    urgent=urgent)
            result.closing = translator.finish()
    except UpstreamRejected as rejected:
        result.rejected = rejected
    except UpstreamStreamFailed as failure:
        log.warning("run %s failed mid-stream: %s", job.response_id, failure.message)
        result.closing = translator.fail(failure.code, failure.message)
    except StreamFenced:
        log.warning("run %s lost its event stream to another writer; stopping", job.response_id)
        result.fenced = True
        await writer.close()
    except Exception:
        log.exception("run %s crashed", job.response_id)
        if stamper.next_sequence_number == 0:
            result.rejected = UpstreamRejected(500, error_body(
                "The server had an error while processing your request.", "server_error",
                None, "server_error"))
        else:
            result.closing = translator.fail(
                "server_error", "The server had an error while processing your request.")
    return result
