"""What a run works from: its job (jobs.Job, as claimed or as its message carried it) with
the history it continues and the chat request built from them."""
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
    return RunJob(**{name: getattr(job, name) for name in _JOB_FIELDS}, chat=chat,
                  items=items, input_count=len(job.input_items))
