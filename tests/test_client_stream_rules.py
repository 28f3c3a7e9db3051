"""client_checks.stream_rules (the stream rules `check_clients` applies to any deployment):
a well-formed stream passes and returns its response; each broken rule fails, naming it."""
import copy

import pytest

from client_checks.stream_rules import StreamBroken, check_events

MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": "Hi there", "annotations": []}]}
RESPONSE = {"id": "resp_1", "object": "response", "status": "completed", "output": [MESSAGE]}


def stream() -> list[dict]:
    events = [
        {"type": "response.created", "response": {**RESPONSE, "status": "in_progress",
                                                  "output": []}},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**MESSAGE, "status": "in_progress", "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": "Hi"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": " there"},
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "text": "Hi there"},
        {"type": "response.output_item.done", "output_index": 0, "item": MESSAGE},
        {"type": "response.completed", "response": RESPONSE},
    ]
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def test_a_well_formed_stream_passes_and_returns_its_response():
    assert check_events(stream()) == RESPONSE


def broken(change):
    events = copy.deepcopy(stream())
    change(events)
    return events


@pytest.mark.parametrize(("events", "message"), [
    ([], "the stream had no events"),
    (stream()[1:], "the first event is 'response.output_item.added', not response.created"),
    (broken(lambda e: e[3].update(sequence_number=9)),
     "sequence numbers are not 0..6: [0, 1, 2, 9, 4, 5, 6]"),
    (broken(lambda e: e.insert(5, {**e[6], "sequence_number": 5}) or [
        event.update(sequence_number=n) for n, event in enumerate(e)]),
     "2 terminal events, or one before the end"),
    (broken(lambda e: e[2].update(delta="Ho")),
     "response.output_text.done #4: the deltas do not add up to the done text"),
    (broken(lambda e: e[5]["item"].update(id="msg_2")),
     "output_item.done #5 closes an item that was not added"),
    (broken(lambda e: e[6]["response"].update(status="failed")),
     "response.completed carries status 'failed'"),
    (broken(lambda e: e[6]["response"].update(output=[])),
     "the final response's output is not the items the stream finished"),
])
def test_each_broken_rule_fails_naming_it(events, message):
    with pytest.raises(StreamBroken) as raised:
        check_events(events)
    assert str(raised.value) == message


def test_an_item_never_done_fails():
    events = [event for event in stream() if event["type"] != "response.output_item.done"]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    with pytest.raises(StreamBroken, match=r"items added but never done: \['msg_1'\]"):
        check_events(events)
