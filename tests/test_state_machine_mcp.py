"""The pure translator across upstream turns (gateway-run MCP tools): a call to an MCP tool
becomes an `mcp_call` (or an `mcp_approval_request`), output indexes continue over turns,
usage adds up, and a run that fails with a call in flight closes it. No I/O here."""
from responses_app.create.request import parse_create_request
from responses_app.translation.resource import new_response_resource
from responses_app.translation.numbering import EventStamper
from responses_app.translation.state_machine import (
    McpToolTarget,
    ResponseTranslator,
    TranslatorOptions,
)
from tests.oracles import check_sse_stream
from tests.test_state_machine import framed, sequential_ids
from tests.upstream_scenarios import CREATED, scenario_for

MCP_TOOLS = {"demo__echo": McpToolTarget("demo", "echo", needs_approval=False),
             "demo__sum": McpToolTarget("demo", "sum", needs_approval=True)}


def translator():
    params = parse_create_request({"model": "m", "input": "hi"}).params
    response = new_response_resource(
        response_id="resp_test", created_at=CREATED, model="m", params=params,
        instructions=None, previous_response_id=None, store=True, background=False,
        status="in_progress")
    return ResponseTranslator(response, TranslatorOptions(
        ids=sequential_ids(), now=lambda: CREATED, mcp_tools=MCP_TOOLS))


def turn(model_input: str, messages=()):
    body = {"messages": [*messages, {"role": "user", "content": model_input}]}
    return scenario_for("fake-tool-caller", body).chunks


def test_an_mcp_call_then_a_second_turn():
    t, stamper = translator(), EventStamper()
    raw = framed(stamper, t.start())
    for chunk in turn('call demo__echo {"text": "hi"}'):
        raw += framed(stamper, t.feed(chunk))
    events, to_run = t.end_turn()
    raw += framed(stamper, events)
    assert [item["id"] for item in to_run] == ["mcp_0"]
    raw += framed(stamper, t.mcp_call_done(to_run[0], output="echo: hi"))
    for chunk in scenario_for("fake-tool-caller", {"messages": [
            {"role": "tool", "content": "echo: hi"}]}).chunks:
        raw += framed(stamper, t.feed(chunk))
    raw += framed(stamper, t.finish())
    events, final = check_sse_stream(raw + b"data: [DONE]\n\n")
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta", "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done", "response.mcp_call.completed",
        "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert final["output"][0] == {
        "id": "mcp_0", "type": "mcp_call", "status": "completed", "server_label": "demo",
        "name": "echo", "arguments": '{"text": "hi"}', "approval_request_id": None,
        "output": "echo: hi", "error": None}
    assert final["usage"]["total_tokens"] == 2 * (12 + 2)


def test_a_call_needing_approval_is_a_request_item_added_at_the_end_of_the_turn():
    t, stamper = translator(), EventStamper()
    raw = framed(stamper, t.start())
    for chunk in turn('call demo__sum {"a": 1, "b": 2}'):
        raw += framed(stamper, t.feed(chunk))
    events, to_run = t.end_turn()
    assert to_run == []
    raw += framed(stamper, events) + framed(stamper, t.finish())
    events, final = check_sse_stream(raw + b"data: [DONE]\n\n")
    assert [e["type"] for e in events][2:] == [
        "response.output_item.added", "response.output_item.done", "response.completed"]
    assert final["output"] == [{"id": "mcpr_0", "type": "mcp_approval_request",
                                "server_label": "demo", "name": "sum",
                                "arguments": '{"a": 1, "b": 2}'}]


def test_a_failure_with_a_call_in_flight_closes_it_incomplete():
    t, stamper = translator(), EventStamper()
    raw = framed(stamper, t.start())
    for chunk in turn('call demo__echo {"text": "hi"}'):
        raw += framed(stamper, t.feed(chunk))
    events, _ = t.end_turn()
    raw += framed(stamper, events) + framed(stamper, t.fail("server_error", "cancelled"))
    events, final = check_sse_stream(raw + b"data: [DONE]\n\n")
    assert events[-2]["type"] == "response.output_item.done"
    assert final["output"][0]["status"] == "incomplete"
    assert final["status"] == "failed"


def test_a_cancel_counts_every_turn_and_the_cut_one():
    """Cancelled in its second turn (the answer streaming, no usage reported yet): the
    response's usage is the first turn's plus what the run counted of the cut one, as a
    finish or a failure sums every turn."""
    t = translator()
    t.start()
    for chunk in turn('call demo__echo {"text": "hi"}'):
        t.feed(chunk)
    _, to_run = t.end_turn()
    t.mcp_call_done(to_run[0], output="echo: hi")
    answer = scenario_for("fake-tool-caller", {"messages": [
        {"role": "tool", "content": "echo: hi"}]}).chunks
    for chunk in answer[:2]:  # the role, then "Results: "
        t.feed(chunk)
    closing, usage_missing = t.close_cut_turn()
    assert usage_missing is True
    assert [e["type"] for e in closing] == [
        "response.output_text.done", "response.content_part.done", "response.output_item.done"]
    t.count_cut_turn({"prompt_tokens": 30, "completion_tokens": 3})
    assert t.cancel() == []  # closed already
    assert t.response["status"] == "cancelled"
    assert t.response["usage"] == {
        "input_tokens": 12 + 30, "input_tokens_details": {"cached_tokens": 0,
                                                          "cache_write_tokens": 0},
        "output_tokens": 2 + 3, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 47}


def test_a_cancel_between_turns_counts_the_turns_done():
    """Cancelled while its MCP call runs (no upstream call in flight): the first turn's
    reported usage, not None (a cancel used to report only the turn in flight)."""
    t = translator()
    t.start()
    for chunk in turn('call demo__echo {"text": "hi"}'):
        t.feed(chunk)
    t.end_turn()
    assert [(e["type"], e["item"]["status"]) for e in t.cancel()] == [
        ("response.output_item.done", "incomplete")]
    assert t.response["usage"] == {
        "input_tokens": 12, "input_tokens_details": {"cached_tokens": 0,
                                                     "cache_write_tokens": 0},
        "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 14}
