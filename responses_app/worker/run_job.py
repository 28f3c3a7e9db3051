"""What a run works from: its job (jobs.Job, as claimed or as its message carried it) with
the history it continues and the chat request built from them; or, for a job that could not
be prepared (our bug: a stored item the chat request cannot be built from), the job with
nothing to send and the error its run fails with at its start (`unprepared`)."""
import logging
from dataclasses import dataclass, field, fields

from observability import metrics

from ..context.rendering import chat_request_for, history_items
from ..delivery.jobs import Job
from ..translation.chat_request import ChatRequest

log = logging.getLogger(__name__)

_JOB_FIELDS = tuple(f.name for f in fields(Job))  # once, not per run


@dataclass
class RunJob(Job):
    chat: ChatRequest | None = None
    # What a run of several upstream turns (MCP tools) rebuilds its chat requests from.
    items: list = field(default_factory=list)  # the history's items, then the input items
    input_count: int = 0
    upstream_replica: str | None = None  # the replica that served its last upstream call
    # why it could not be prepared: its streaming phase raises it at once (a crash before
    # any event: run_streaming.py), so its client is answered as for any crash
    failure: Exception | None = None

    @property
    def response_id(self) -> str:
        return self.id

    @property
    def include(self) -> list[str]:
        return self.request["include"]

    @property
    def cancellable(self) -> bool:
        """Background runs can be cancelled by their client; store=false runs by the relay
        when their client leaves (nobody could ever read the rest); a WebSocket's runs
        that can be steered by its `response.steer` (the front door says so)."""
        return self.background or not self.store or bool(self.context.get("steerable"))


def prepared(job: Job) -> RunJob:
    """The run's job with its history and chat request; reads the history of a chain or a
    conversation (database), if it continues one and its request does not carry it."""
    if "history" in job.request:  # supplied by the front door (a WebSocket's last response)
        items = list(job.request["history"])
    else:
        items = history_items(job.tenant_id, job.previous_response_id, job.conversation_id)
    items.extend(job.input_items)
    chat = chat_request_for(job.model, job.request, items)
    for repair in chat.repairs:
        log.debug("response %s: history repair %s", job.id, repair)
        metrics.HISTORY_REPAIRS.labels(repair).inc()
    return RunJob(**_job_fields(job), chat=chat, items=items, input_count=len(job.input_items))


def unprepared(job: Job, failure: Exception) -> RunJob:
    """The run's job when preparing it failed with `failure` (not a database outage: that
    is tried again, run_store.py): no history and an empty chat request, never sent; its
    run fails with `failure` before anything, as a run that crashes does."""
    return RunJob(**_job_fields(job), chat=ChatRequest(body={}), failure=failure)


def _job_fields(job: Job) -> dict:
    return {name: getattr(job, name) for name in _JOB_FIELDS}
