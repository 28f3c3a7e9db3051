"""Tests of the shared stream checkers (tests.sse, tests.invariants, tests.oracles).

Pure pytest, no Django: run with ``-p no:django``. A hand-made, correct stream (reasoning
item, text message, function call) must pass ``check_sse_stream``; then each test breaks
one invariant and asserts the checker fails, proving it can.
"""

from __future__ import annotations

import copy
import json

import pytest

from tests.invariants import check_stream
from tests.oracles import (
    OPENRESPONSES_EVENT_MODELS,
    OPENRESPONSES_UNVALIDATED_EVENTS,
    RESPONSE_RESOURCE_FIELDS,
    check_sse_chunks,
    check_sse_stream,
    validate_event,
    validate_response,
)
from tests.sse import parse_sse, parse_sse_chunks

RESP_ID = "resp_0123456789abcdef"
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
USAGE = {
    "input_tokens": 21,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},  # openai 3.54 requires both
    "output_tokens": 17,
    "output_tokens_details": {"reasoning_tokens": 5},
    "total_tokens": 38,
}


def response_obj(status: str, output: list, **overrides) -> dict:
    resp = {
        "id": RESP_ID,
        "object": "response",
        "created_at": 1_700_000_000,
        "completed_at": None,
        "status": status,
        "incomplete_details": None,
        "model": "test-model",
        "previous_response_id": None,
        "instructions": None,
        "output": output,
        "error": None,
        "tools": copy.deepcopy(TOOLS),
        "tool_choice": "auto",
        "truncation": "disabled",
        "parallel_tool_calls": True,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": 1.0,
        "reasoning": {"effort": "medium", "summary": None},
        "usage": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "store": True,
        "background": False,
        "service_tier": "default",
        "metadata": {},
        "safety_identifier": None,
        "prompt_cache_key": None,
    }
    resp.update(overrides)
    return resp


def ev(type_: str, **fields) -> dict:
    return {"type": type_, **fields}


def numbered(events: list[dict]) -> list[dict]:
    """Independent deep copies of the events, numbered 0..n-1 (no shared sub-objects)."""
    return [copy.deepcopy({**e, "sequence_number": n}) for n, e in enumerate(events)]


def good_events() -> list[dict]:
    rs, msg, fc = "rs_001", "msg_001", "fc_001"
    reasoning_text = ["Need ", "the weather."]
    answer = ["Let me ", "check ", "that."]
    args = ['{"city":', '"Paris"}']
    rs_done = {
        "type": "reasoning",
        "id": rs,
        "summary": [{"type": "summary_text", "text": "Checks weather."}],
        "content": [{"type": "reasoning_text", "text": "".join(reasoning_text)}],
        "status": "completed",
    }
    msg_part = {"type": "output_text", "text": "".join(answer), "annotations": [], "logprobs": []}
    msg_done = {"type": "message", "id": msg, "status": "completed", "role": "assistant", "content": [msg_part]}
    fc_done = {
        "type": "function_call",
        "id": fc,
        "call_id": "call_001",
        "name": "get_weather",
        "arguments": "".join(args),
        "status": "completed",
    }
    loc = lambda item_id, index: {"item_id": item_id, "output_index": index}  # noqa: E731
    events = [
        ev("response.created", response=response_obj("in_progress", [])),
        ev("response.in_progress", response=response_obj("in_progress", [])),
        # reasoning item: content part with reasoning_text, plus a summary part
        ev(
            "response.output_item.added",
            output_index=0,
            item={"type": "reasoning", "id": rs, "summary": [], "content": [], "status": "in_progress"},
        ),
        ev("response.content_part.added", **loc(rs, 0), content_index=0, part={"type": "reasoning_text", "text": ""}),
        *[ev("response.reasoning_text.delta", **loc(rs, 0), content_index=0, delta=d) for d in reasoning_text],
        ev("response.reasoning_text.done", **loc(rs, 0), content_index=0, text="".join(reasoning_text)),
        ev("response.content_part.done", **loc(rs, 0), content_index=0, part=rs_done["content"][0]),
        ev(
            "response.reasoning_summary_part.added",
            **loc(rs, 0),
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        ev("response.reasoning_summary_text.delta", **loc(rs, 0), summary_index=0, delta="Checks weather."),
        ev("response.reasoning_summary_text.done", **loc(rs, 0), summary_index=0, text="Checks weather."),
        ev("response.reasoning_summary_part.done", **loc(rs, 0), summary_index=0, part=rs_done["summary"][0]),
        ev("response.output_item.done", output_index=0, item=rs_done),
        # assistant message with streamed output_text
        ev(
            "response.output_item.added",
            output_index=1,
            item={"type": "message", "id": msg, "status": "in_progress", "role": "assistant", "content": []},
        ),
        ev(
            "response.content_part.added",
            **loc(msg, 1),
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
        ),
        *[
            ev("response.output_text.delta", **loc(msg, 1), content_index=0, delta=d, logprobs=[])
            for d in answer
        ],
        ev("response.output_text.done", **loc(msg, 1), content_index=0, text="".join(answer), logprobs=[]),
        ev("response.content_part.done", **loc(msg, 1), content_index=0, part=msg_part),
        ev("response.output_item.done", output_index=1, item=msg_done),
        # function call with streamed arguments
        ev("response.output_item.added", output_index=2, item={**fc_done, "arguments": "", "status": "in_progress"}),
        *[ev("response.function_call_arguments.delta", **loc(fc, 2), delta=d) for d in args],
        ev("response.function_call_arguments.done", **loc(fc, 2), arguments="".join(args), name="get_weather"),
        ev("response.output_item.done", output_index=2, item=fc_done),
        ev(
            "response.completed",
            response=response_obj(
                "completed", [rs_done, msg_done, fc_done], completed_at=1_700_000_002, usage=USAGE
            ),
        ),
    ]
    return numbered(events)


def render_chunks(events: list[dict], *, done: bool = True) -> list[bytes]:
    chunks = [f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events]
    if done:
        chunks.append(b"data: [DONE]\n\n")
    return chunks


def render(events: list[dict], *, done: bool = True) -> bytes:
    return b"".join(render_chunks(events, done=done))


def index_of(events: list[dict], type_: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(events) if e["type"] == type_][nth]


def assert_rejected(events: list[dict], match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_sse_stream(render(events))


# --------------------------------------------------------------------------- accepted


def test_good_stream_passes():
    events = good_events()
    got_events, final = check_sse_stream(render(events))
    assert got_events == events
    assert final == events[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message", "function_call"]


def test_good_stream_as_server_writes_passes():
    events = good_events()
    chunks = render_chunks(events)
    chunks.insert(5, b": keep-alive\n\n")
    chunks.append(b"")  # a final empty ASGI body message is fine
    got_events, _ = check_sse_chunks(chunks, one_block_per_chunk=True)
    assert got_events == events
    assert parse_sse_chunks(chunks).keepalives == 1


def test_keepalives_are_counted_and_ignored():
    raw = b": keep-alive\n\n" + render(good_events()[:3], done=False) + b": keep-alive\n\n: x\n\n"
    parsed = parse_sse(raw, require_done=False)
    assert (len(parsed.events), parsed.keepalives, parsed.done) == (3, 3, False)


def test_background_start_queued_passes():
    events = good_events()
    events[0]["response"] = response_obj("queued", [], background=True)
    queued = ev("response.queued", response=response_obj("queued", [], background=True))
    events = numbered([events[0], queued, *events[1:]])
    for e in events:
        if "response" in e:
            e["response"]["background"] = True
    check_sse_stream(render(events))


def test_every_response_resource_field_is_in_the_skeleton():
    assert set(response_obj("completed", [])) == set(RESPONSE_RESOURCE_FIELDS)


# --------------------------------------------------------------------------- invariants


def test_rejects_sequence_number_gap():
    events = good_events()
    for e in events[7:]:
        e["sequence_number"] += 1
    assert_rejected(events, "sequence_number must be exactly 7")


def test_rejects_missing_output_item_done():
    events = good_events()
    del events[index_of(events, "response.output_item.done", 1)]
    assert_rejected(numbered(events), "never done|not open")


def test_rejects_output_text_delta_mismatch():
    events = good_events()
    events[index_of(events, "response.output_text.delta", 1)]["delta"] = "CHECK "
    assert_rejected(events, "concatenated deltas")


def test_rejects_item_text_differing_from_done_part():
    events = good_events()
    for e in (events[index_of(events, "response.output_item.done", 1)]["item"], events[-1]["response"]["output"][1]):
        e["content"][0]["text"] = "something else"
    assert_rejected(events, "streamed done parts")


def test_rejects_two_terminal_events():
    events = good_events()
    assert_rejected(numbered([*events, copy.deepcopy(events[-1])]), "exactly one terminal event")


def test_rejects_event_after_terminal():
    events = good_events()
    extra = copy.deepcopy(events[index_of(events, "response.output_text.delta")])
    assert_rejected(numbered([*events, extra]), "not the last event")


def test_rejects_missing_function_call_arguments_done():
    events = good_events()
    del events[index_of(events, "response.function_call_arguments.done")]
    assert_rejected(numbered(events), "function_call_arguments.done' never sent")


def test_rejects_function_arguments_mismatch():
    events = good_events()
    events[index_of(events, "response.function_call_arguments.delta")]["delta"] = '{"town":'
    assert_rejected(events, "concatenated deltas")


def test_rejects_call_id_change():
    events = good_events()
    events[index_of(events, "response.output_item.done", 2)]["item"]["call_id"] = "call_other"
    events[-1]["response"]["output"][2]["call_id"] = "call_other"
    assert_rejected(events, "'call_id' changed")


def test_rejects_delta_outside_its_content_part():
    events = good_events()
    late = {**events[index_of(events, "response.output_text.delta")], "delta": ""}
    events.insert(index_of(events, "response.content_part.done", 1) + 1, late)
    assert_rejected(numbered(events), "already done")


def test_rejects_delta_for_unknown_item():
    events = good_events()
    events[index_of(events, "response.output_text.delta")]["item_id"] = "msg_unknown"
    assert_rejected(events, "not an open item")


def test_rejects_output_index_out_of_order():
    events = good_events()
    for i in (index_of(events, "response.output_item.added", 2), index_of(events, "response.output_item.done", 2)):
        events[i]["output_index"] = 3
    assert_rejected(events, "expected 2")


def test_rejects_terminal_output_mismatch():
    events = good_events()
    output = events[-1]["response"]["output"]
    output[1], output[2] = output[2], output[1]
    assert_rejected(events, "terminal response.output differs")


def test_rejects_response_id_change():
    events = good_events()
    events[-1]["response"]["id"] = "resp_other"
    assert_rejected(events, "differs from")


def test_rejects_stream_not_starting_with_created():
    events = good_events()
    events[0], events[1] = events[1], events[0]
    assert_rejected(numbered(events), "must start with created")


def test_rejects_usage_total_mismatch():
    events = good_events()
    events[-1]["response"]["usage"]["total_tokens"] = 39
    assert_rejected(events, "total_tokens")


def test_rejects_failed_without_error():
    events = good_events()
    events[-1]["type"] = "response.failed"
    events[-1]["response"]["status"] = "failed"
    assert_rejected(events, "failed response needs error")


def test_accepts_failed_with_error():
    events = good_events()
    events[-1]["type"] = "response.failed"
    events[-1]["response"].update(status="failed", error={"code": "server_error", "message": "upstream died"})
    check_sse_stream(render(events))


# --------------------------------------------------------------------------- framing


def test_rejects_wrong_event_name():
    raw = render(good_events()).replace(b"event: response.output_text.done\n", b"event: response.text.done\n", 1)
    with pytest.raises(AssertionError, match="does not match data type"):
        check_sse_stream(raw)


def test_rejects_crlf_line_endings():
    with pytest.raises(AssertionError, match="line endings"):
        check_sse_stream(render(good_events()).replace(b"\n", b"\r\n"))


def test_rejects_data_split_over_two_lines():
    raw = render(good_events()).replace(b'data: {"type":"response.output_text.done",', b'data: {"type":"response.output_text.done",\ndata: ', 1)
    with pytest.raises(AssertionError, match="exactly 2 lines"):
        check_sse_stream(raw)


def test_rejects_missing_done():
    with pytest.raises(AssertionError, match=r"\[DONE\]"):
        check_sse_stream(render(good_events(), done=False))


def test_rejects_anything_after_done():
    with pytest.raises(AssertionError, match=r"after 'data: \[DONE\]'"):
        check_sse_stream(render(good_events()) + b": keep-alive\n\n")


def test_rejects_non_json_data():
    with pytest.raises(AssertionError, match="not valid JSON"):
        parse_sse(b"event: x\ndata: {nope\n\ndata: [DONE]\n\n")


def test_rejects_block_split_across_server_writes():
    joined = render(good_events())
    cut = joined.index(b"\ndata: ", 10) + 1  # inside the first event block
    chunks = [joined[:cut], joined[cut:]]
    parse_sse(b"".join(chunks))  # as one byte stream it is fine ...
    with pytest.raises(AssertionError, match="block boundary"):
        parse_sse_chunks(chunks)  # ... but not as server writes


def test_one_block_per_chunk_is_opt_in():
    chunks = [b"".join(render_chunks(good_events()))]
    parse_sse_chunks(chunks)
    with pytest.raises(AssertionError, match="one block per write"):
        parse_sse_chunks(chunks, one_block_per_chunk=True)


# --------------------------------------------------------------------------- oracles


def test_oracle_rejects_coerced_field():
    event = good_events()[4]
    event["sequence_number"] = "4"
    with pytest.raises(AssertionError, match="round-trip"):
        validate_event(event)


def test_oracle_rejects_unknown_event_type():
    with pytest.raises(AssertionError, match="not an event type of openai"):
        validate_event({"type": "response.output_text.delta.extra", "sequence_number": 0})


def test_response_missing_a_resource_key_is_rejected():
    resp = response_obj("completed", [])
    del resp["safety_identifier"]  # optional for the openai model
    with pytest.raises(AssertionError, match="safety_identifier"):
        validate_response(resp)


def test_openresponses_oracle_is_live():
    resp = response_obj("completed", [], reasoning={"effort": "medium"})  # openai accepts this
    with pytest.raises(AssertionError, match="openresponses ResponseResource rejects"):
        validate_response(resp)


def test_declared_unvalidated_events_really_lack_a_model():
    for type_, reason in OPENRESPONSES_UNVALIDATED_EVENTS.items():
        assert reason
        if type_ != "error":  # modelled there, but with a different shape (see reason)
            assert type_ not in OPENRESPONSES_EVENT_MODELS


def test_mcp_items_and_events_are_tolerated():
    mcp_tool = {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp", "require_approval": "never"}
    tools = [*copy.deepcopy(TOOLS), mcp_tool]
    listing = {
        "type": "mcp_list_tools",
        "id": "mcpl_001",
        "server_label": "docs",
        "tools": [{"name": "search", "input_schema": {"type": "object"}}],
    }
    call = {
        "type": "mcp_call",
        "id": "mcp_001",
        "name": "search",
        "server_label": "docs",
        "arguments": "",
        "status": "in_progress",
    }
    call_done = {**call, "arguments": '{"q":"x"}', "status": "completed", "output": "found"}
    loc0 = {"item_id": "mcpl_001", "output_index": 0}
    loc1 = {"item_id": "mcp_001", "output_index": 1}
    events = numbered(
        [
            ev("response.created", response=response_obj("in_progress", [], tools=tools)),
            ev("response.in_progress", response=response_obj("in_progress", [], tools=tools)),
            ev("response.output_item.added", output_index=0, item={**listing, "tools": []}),
            ev("response.mcp_list_tools.in_progress", **loc0),
            ev("response.mcp_list_tools.completed", **loc0),
            ev("response.output_item.done", output_index=0, item=listing),
            ev("response.output_item.added", output_index=1, item=call),
            ev("response.mcp_call.in_progress", **loc1),
            ev("response.mcp_call_arguments.delta", **loc1, delta='{"q":"x"}'),
            ev("response.mcp_call_arguments.done", **loc1, arguments='{"q":"x"}'),
            ev("response.mcp_call.completed", **loc1),
            ev("response.output_item.done", output_index=1, item=call_done),
            ev("response.completed", response=response_obj("completed", [listing, call_done], tools=tools)),
        ]
    )
    check_sse_stream(render(events))
    events[3]["item_id"] = "mcp_001"  # list_tools event pointing at the (not yet added) call
    with pytest.raises(AssertionError):
        check_stream(events)
