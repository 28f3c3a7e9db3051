"""A run's job: what a worker needs of a response to run it, in one shape from the request
that creates the response to the run that claims it, and the run queue's messages.

A `Job` is the columns of the response's row that a run reads (JOB_COLUMNS) and its id.
The request side builds it from the validated request and sends its run: the message is
the id, after the web wrote the job as the row (lifecycle.insert_response), or, for a run
that may start before its claim is confirmed, the id with the job's columns and creation
time (serialized here, once), and the run writes the row as it claims it
(lifecycle.claim_carried). A run whose message has no job reads the same columns back with
its claim; when a client waits for its first event (`Awaited`), its message says so, with
what the run needs to answer that client without its row. A message given back to the
queue (redelivery.py) keeps its job, marked `resent`: its run claims before it calls the
upstream; or marked `abandoned` (a run whose claim met a database outage, its client
answered 503: worker/run_abandon.py): its run never runs, it only removes the row the
lost claim may have written (or the web wrote). When tracing is on the message also
carries the request's trace context (W3C headers), so the run continues the request's
trace.
Another kind of run rides the same queue with its own message field (a chat completion's:
`"chat"`): its app registers the field, how to read its job and the dotted path of its run
function (register_message_kind, from the app's `ready()`), so this floor imports no app
above it and the worker imports the run function only when such a message comes.
Both sides import this module; it imports neither.
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import orjson
from django.utils.module_loading import import_string

RUN_QUEUE_KEY = "gw:runs"  # the Redis list of run messages (dispatch.py, run_queue.py)
# A larger job travels in the database only: the worker reads it with its claim.
MAX_JOB_BYTES = 256 * 1024
MESSAGE_ROOM = 4096  # for what a message adds to its job (creation time, trace context)
# The columns of a response row that make its run's job (what a claim reads).
JOB_COLUMNS = ("tenant_id", "model", "store", "background", "previous_response_id", "request",
               "input_items", "resource", "conversation_id")


@dataclass(frozen=True)
class MessageKind:
    """A kind of run other than a response's: its message's field, how to read its job from
    the parsed message, and the dotted path of its run function `run(job, settled)`."""

    field: str
    job_of: Callable[[dict], object]
    run_path: str


MESSAGE_KINDS: dict[str, MessageKind] = {}  # by the job's `kind`
_runs: dict[str, Callable] = {}


def register_message_kind(kind: MessageKind) -> None:
    MESSAGE_KINDS[kind.field] = kind


def run_of_kind(kind: str) -> Callable:
    """The run function of a registered kind (imported once, in the worker only)."""
    run = _runs.get(kind)
    if run is None:
        run = _runs[kind] = import_string(MESSAGE_KINDS[kind].run_path)
    return run


@dataclass
class Job:
    id: str
    tenant_id: int
    model: str
    store: bool
    background: bool
    previous_response_id: str | None
    request: dict  # instructions, params, include, context (what the admission settles)
    input_items: list
    resource: dict  # the response object as created (status queued)
    conversation_id: str | None = None
    created_at: datetime | None = None  # written with the row
    carried: bool = False  # its message carries it: the run writes its row and calls the
    # upstream before its claim is confirmed (a client waits for its first event and the
    # run reads nothing stored)
    resent: bool = False  # its message was given back: the run claims before it calls
    abandoned: bool = False  # its client was answered 503 (its claim met a database
    # outage): its run only removes the row its claim may have written, and never runs
    awaited: bool = False  # a client waits for its first event (not background): a
    # message without the job says so (`Awaited`)
    encoded: bytes | None = field(default=None, repr=False, compare=False)  # its columns'
    # JSON, kept by `carriable` for its message (encoded once)

    @classmethod
    def of_columns(cls, response_id: str, columns: dict, carried: bool = False) -> "Job":
        """The job from its row's columns (as claimed, or as a message carried them)."""
        values = {name: columns[name] for name in JOB_COLUMNS}
        values["store"], values["background"] = bool(values["store"]), bool(values["background"])
        return cls(id=response_id, carried=carried, **values)

    def columns(self) -> dict:
        return {name: getattr(self, name) for name in JOB_COLUMNS}

    @property
    def context(self) -> dict:
        """The request id and what the run must settle of its admission (accounting.ratelimit)."""
        return self.request.get("context") or {}

    def carriable(self) -> bool:
        """Whether a message can carry this job (small enough, and JSON orjson encodes);
        its encoding is kept for the message."""
        try:
            self.encoded = orjson.dumps(self.columns())
        except TypeError:  # an integer beyond 64 bits: the database has the job
            return False
        return len(self.encoded) <= MAX_JOB_BYTES - MESSAGE_ROOM

    def message(self, trace: dict | None = None, resent: bool = False) -> bytes:
        """The run queue's message for this job's run (with the trace context `trace`)."""
        if not self.carried and self.awaited:
            return Awaited(self.id, self.tenant_id, self.model, self.context).message(trace)
        columns = None
        if self.carried:
            columns = self.columns() if self.encoded is None else orjson.Fragment(self.encoded)
        return run_message(self.id, columns, trace, created_at=self.created_at, resent=resent,
                           abandoned=self.abandoned)


@dataclass
class Awaited:
    """The run of a response whose row the web wrote (its message has no job) while a client
    waits for its first event: what its message adds to its id, so that the run can answer
    that client without reading the row (its tenant, model and admission context). Its
    claim, as a carried run's, is tried again through a database outage only until
    DATABASE_WAIT_SECONDS after the run started; then the run is abandoned, its client
    answered 503 (worker/run_abandon.py), and the copy given back `abandoned` removes the
    row once the database answers."""

    id: str
    tenant_id: int
    model: str
    context: dict
    abandoned: bool = False

    def message(self, trace: dict | None = None, resent: bool = False) -> bytes:
        """Its run queue message (given back, `resent` adds nothing: an id-only run always
        claims before it calls the upstream)."""
        fields = {"id": self.id, "job": None, "awaited": {
            "tenant_id": self.tenant_id, "model": self.model, "context": self.context}}
        if self.abandoned:
            fields["abandoned"] = True
        return _encoded(fields, trace) or run_message(self.id, None, trace)


@dataclass
class Unreadable:
    """A run message whose job cannot be read (our bug, or a message another version of
    the gateway wrote), its id read: its run ends as a crash before its claim
    (worker/run_crash.unclaimed), its client answered the bare 500; nothing is known of
    its admission (its slot lapses with its lease)."""

    id: str
    error: Exception
    tenant_id = None
    model = None

    @property
    def context(self) -> dict:
        return {}


def run_message(response_id: str, columns: dict | orjson.Fragment | None = None,
                trace: dict | None = None, created_at: datetime | None = None,
                resent: bool = False, abandoned: bool = False) -> bytes:
    """A run's message: its id, with its job's columns (and creation time; and whether it
    is given back, or abandoned) when given and small enough, and the trace context when
    given."""
    if columns is not None:
        fields = {"id": response_id, "job": columns}
        if created_at is not None:
            fields["created_at"] = created_at.isoformat()
        if resent:
            fields["resent"] = True
        if abandoned:
            fields["abandoned"] = True
        message = _encoded(fields, trace)
        if message is not None and len(message) <= MAX_JOB_BYTES:
            return message
    if trace is not None:
        return _encoded({"id": response_id, "job": None}, trace)
    return response_id.encode()


def _encoded(fields: dict, trace: dict | None) -> bytes | None:
    if trace is not None:
        fields["trace"] = trace
    try:
        return orjson.dumps(fields)
    except TypeError:  # an integer beyond 64 bits: the database has the job
        return None


def _parsed(message: bytes) -> dict:
    if message.startswith(b"{"):
        return orjson.loads(message)
    return {"id": message.decode(), "job": None}


def parse_run_message(message: bytes) -> tuple[str, dict | None]:
    """(response id, job columns or None) of a run queue message."""
    parsed = _parsed(message)
    return parsed["id"], parsed.get("job")


def job_of_message(message: bytes) -> tuple[str, Job | Awaited | Unreadable | None,
                                           dict | None]:
    """(response id, the job it carries, or what it says of a run whose client waits
    (`Awaited`), or None, or `Unreadable`; the trace context it carries or None). A
    message whose id cannot be read either raises."""
    parsed = _parsed(message)
    try:
        return _job_of_parsed(parsed)
    except Exception as exc:
        return parsed["id"], Unreadable(parsed["id"], exc), None


def _job_of_parsed(parsed: dict) -> tuple[str, Job | Awaited | None, dict | None]:
    for kind in MESSAGE_KINDS.values():  # another kind of run (e.g. chat_completions/jobs.py)
        if kind.field in parsed:
            return parsed["id"], kind.job_of(parsed), parsed.get("trace")
    response_id, columns = parsed["id"], parsed["job"]
    job = None
    if columns is None and "awaited" in parsed:
        job = Awaited(response_id, **parsed["awaited"], abandoned=parsed.get("abandoned", False))
    elif columns is not None:
        job = Job.of_columns(response_id, columns, True)
        job.resent = parsed.get("resent", False)
        job.abandoned = parsed.get("abandoned", False)
        if "created_at" in parsed:
            job.created_at = datetime.fromisoformat(parsed["created_at"])
    return response_id, job, parsed.get("trace")

