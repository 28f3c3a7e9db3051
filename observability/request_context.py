"""The request id: taken from a sane client `x-request-id` or made up, returned in the
response, put on every log line (a context variable), and stored with the response so
the worker's log lines of its run carry it too."""
import logging
import re
import secrets
from contextvars import ContextVar

HEADER = "x-request-id"
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/=+\-]{1,128}")

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)


def request_id_from(client_value: str | None) -> str:
    """The client's id if it is short and plain, else a new one."""
    if client_value and SANE_REQUEST_ID.fullmatch(client_value):
        return client_value
    return "req_" + secrets.token_hex(16)


def bind_request_id(request_id: str | None) -> None:
    """Log lines of this context (thread, task, and tasks it starts) carry `request_id`."""
    request_id_var.set(request_id)


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record (None outside a request or run)."""

    def filter(self, record):
        record.request_id = request_id_var.get()
        return True
