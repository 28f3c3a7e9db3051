"""How a relay's span says its stream ended (relay_span.ended_so): by what its last entry
is, never by when it came. No deployment: the outcome, as RelaySpan.end_with records it
(tests/test_e2e_tracing.py checks the recorded spans)."""
import orjson
import pytest

from chat_completions.relay import _terminal as chat_terminal
from responses_app.api.relay_span import ended_so, response_terminal
from responses_app.bus.entries import Entry, bus_failure_entry, failure_entry, is_bus_failure
from responses_app.errors import APIError, ServiceUnavailable


def event(body: dict) -> bytes:
    return orjson.dumps(body)


COMPLETED = event({"type": "response.completed", "response": {"status": "completed"}})
INCOMPLETE = event({"type": "response.incomplete", "response": {"status": "incomplete"}})
FAILED = event({"type": "response.failed", "response": {
    "status": "failed", "error": {"code": "server_error", "message": "boom"}}})
DELTA = event({"type": "response.output_text.delta", "delta": "Hi"})
EMPTY_END = Entry(8, 7, [], end=True)  # what a resume after the end gets (Subscription)
RUN_ERROR = failure_entry(APIError("Rate limit reached.", status=429,
                                   type="rate_limit_exceeded", code="rate_limit_exceeded"))
BUS_FAILURE = bus_failure_entry(ServiceUnavailable("The event stream is unavailable; retry "
                                                   "shortly."))


@pytest.mark.parametrize("last, passed_end, ended", [
    (Entry(5, 7, [DELTA, DELTA, COMPLETED], end=True), None, ("completed", None)),
    (Entry(7, 7, [INCOMPLETE], end=True), None, ("incomplete", None)),
    (Entry(7, 7, [FAILED], end=True), None, ("failed", "server_error")),
    # a resume after the end: no event sent, the outcome of the end's last event (before:
    # `cancelled` for each)
    (EMPTY_END, COMPLETED, ("completed", None)),
    (EMPTY_END, INCOMPLETE, ("incomplete", None)),
    (EMPTY_END, FAILED, ("failed", "server_error")),
    # a stream that ended without a terminal event, a resume after it too
    (EMPTY_END, None, ("cancelled", None)),
    # an error entry: the run's (it failed before it started) or the bus's, whatever came
    # before it (before: `bus_error` after events, `failed` before any, for both)
    (RUN_ERROR, None, ("failed", "rate_limit_exceeded")),
    (BUS_FAILURE, None, ("bus_error", "service_unavailable")),
])
def test_a_relay_ends_as_its_last_entry_says(last, passed_end, ended):
    assert ended_so(last, response_terminal, passed_end) == ended


def test_a_chat_streams_error_entries_are_told_apart_the_same_way():
    assert ended_so(RUN_ERROR, chat_terminal) == ("failed", "rate_limit_exceeded")
    assert ended_so(BUS_FAILURE, chat_terminal) == ("bus_error", "service_unavailable")
    assert ended_so(Entry(3, 3, [event({"error": {"code": "server_error"}})], end=True),
                    chat_terminal) == ("failed", "server_error")


def test_the_bus_failure_entry_is_the_failure_entry_marked_as_the_bus():
    assert (is_bus_failure(BUS_FAILURE), is_bus_failure(RUN_ERROR)) == (True, False)
    unmarked = failure_entry(ServiceUnavailable("The event stream is unavailable; retry "
                                                "shortly."))
    assert (BUS_FAILURE.first, BUS_FAILURE.last, BUS_FAILURE.events, BUS_FAILURE.end) == (
        -1, -1, [], True)
    assert BUS_FAILURE.error == {**unmarked.error, "bus": True}
    assert unmarked.error["body"]["error"]["code"] == "service_unavailable"
