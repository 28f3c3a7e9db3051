"""What a run works from: its job (jobs.Job, as claimed or as its message carried it) with
the history it continues and the chat request built from them."""
from dataclasses import dataclass, field, fields

from django.conf import settings

from conversations.items import conversation_items

from ..history import chain_items
from ..jobs import Job
from ..translation.chat_request import ChatRequest, build_chat_request


@dataclass
class RunJob(Job):
    chat: ChatRequest | None = None
    # What a run of several upstream turns (MCP tools) rebuilds its chat requests from.
    items: list = field(default_factory=list)  # the history's items, then the input items
    input_count: int = 0

    @property
    def response_id(self) -> str:
        return self.id

    @property
    def include(self) -> list[str]:
        return self.request["include"]

    @property
    def cancellable(self) -> bool:
        """Background runs can be cancelled by their client; store=false runs by the relay
        when their client leaves (nobody could ever read the rest)."""
        return self.background or not self.store


def prepared(job: Job) -> RunJob:
    """The run's job with its history and chat request; reads the history of a chain or a
    conversation (database), if it continues one and its request does not carry it."""
    items = []
    if "history" in job.request:  # supplied by the front door (a WebSocket's last response)
        items = list(job.request["history"])
    elif job.previous_response_id:
        items = chain_items(job.tenant_id, job.previous_response_id) or []
    elif job.conversation_id:
        items = conversation_items(job.conversation_id)
    items.extend(job.input_items)
    chat = build_chat_request(
        model=job.model, instructions=job.request.get("instructions"), items=items,
        params=job.request["params"], include=job.request["include"],
        max_tokens_param=settings.UPSTREAM_MAX_TOKENS_PARAM,
    )
    return RunJob(**{f.name: getattr(job, f.name) for f in fields(Job)}, chat=chat,
                  items=items, input_count=len(job.input_items))
