"""A chat completion's run, as the run queue carries it: the message always carries the
whole job (a chat completion has no row to claim: it is stored when it ends), marked
`"chat"` so the run queue tells it from a response's: the app's `ready()` registers the
field, `chat_job_of` and the run function's path (responses_app.delivery.jobs.MessageKind).
Both sides import this module; it imports neither."""
from dataclasses import dataclass, fields

import orjson

KIND = "chat"


@dataclass
class ChatJob:
    id: str  # chatcmpl-…
    tenant_id: int
    model: str
    created: int  # Unix seconds (the object's `created`)
    created_at: float  # Unix seconds, precisely (the stored row's order)
    stream: bool
    store: bool
    include_usage: bool
    metadata: dict
    messages: list  # as the client sent them (stored for /messages)
    body: dict  # the upstream's chat body
    client_function_names: list
    context: dict  # request id, what the run settles of its admission (accounting.ratelimit)
    carried: bool = True  # the dispatchers' flag: the message carries the job
    resent: bool = False  # given back to the queue (delivery.redelivery): run only if never started

    kind = KIND

    def message(self, trace: dict | None = None, resent: bool = False) -> bytes:
        job = {field.name: getattr(self, field.name) for field in fields(self)}  # no deep copy
        job["resent"] = resent or self.resent
        message = {"id": self.id, "chat": job}
        if trace is not None:
            message["trace"] = trace
        return orjson.dumps(message)


def chat_job_of(fields: dict) -> ChatJob:
    """The job of a parsed run message that has a `chat` field."""
    values = dict(fields["chat"])
    values.pop("carried", None)
    return ChatJob(**values)
