"""Request shapes of agent clients, end to end on the production path (Daphne + Celery +
Redis + Postgres) with the fake upstream recording what it is sent: a custom tool round
trip (Codex's apply_patch), a tool output that answers nothing, history repair and phase.
Every stream goes through the SSE framing check, both schema oracles, the openai SDK's
`TypeAdapter(ResponseStreamEvent)` and the invariant checker."""
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from tests.oracles import check_sse_stream

PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Apply a patch.",
              "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}
PATCH_FUNCTION = {"type": "function", "function": {
    "name": "apply_patch",
    "description": "Apply a patch.\n\nThe `input` argument must be text matching this lark "
                   "grammar:\nstart: /.+/",
    "parameters": {"type": "object", "properties": {"input": {
        "type": "string", "description": "The raw input of the tool (free-form text)."}},
        "required": ["input"], "additionalProperties": False}}}
ARGUMENTS = '{"input": "*** Begin Patch\\n*** End Patch"}'
START = ["response.created", "response.in_progress"]
TEXT = ["response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done"]
EVENT = TypeAdapter(ResponseStreamEvent)


def stream(api, body) -> tuple[list[dict], dict]:
    with api.stream("POST", "/responses", json={**body, "stream": True}) as response:
        raw = response.read()
    assert response.status_code == 200, raw
    events, final = check_sse_stream(raw)
    for event in events:
        EVENT.validate_python(event)
    return events, final


def sent(upstream, index=-1) -> dict:
    return upstream.requests()[index]["body"]


def test_a_custom_tool_round_trip(api, clean_upstream):
    events, first = stream(api, {"model": "fake-tool-caller", "tools": [PATCH_TOOL],
                                 "input": f"call apply_patch {ARGUMENTS}"})
    assert sent(clean_upstream) == {
        "model": "fake-tool-caller", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": f"call apply_patch {ARGUMENTS}"}],
        "tools": [PATCH_FUNCTION], "tool_choice": "auto", "parallel_tool_calls": True}
    call = first["output"][0]
    assert [(e["type"], e.get("delta", e.get("input"))) for e in events] == [
        *[(kind, None) for kind in START],
        ("response.output_item.added", None),
        # the arguments arrive in two halves: each half's characters of the input
        ("response.custom_tool_call_input.delta", "*** Begin "),
        ("response.custom_tool_call_input.delta", "Patch\n*** End Patch"),
        ("response.custom_tool_call_input.done", "*** Begin Patch\n*** End Patch"),
        ("response.output_item.done", None),
        ("response.completed", None)]
    assert call == {"id": call["id"], "type": "custom_tool_call", "status": "completed",
                    "call_id": "call_0", "name": "apply_patch",
                    "input": "*** Begin Patch\n*** End Patch"}
    assert call["id"].startswith("ctc_")

    _, second = stream(api, {"model": "fake-tool-caller", "tools": [PATCH_TOOL],
                             "previous_response_id": first["id"], "input": [
                                 {"type": "custom_tool_call_output", "call_id": "call_0",
                                  "output": "Done!"}]})
    assert sent(clean_upstream)["messages"] == [
        {"role": "user", "content": f"call apply_patch {ARGUMENTS}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {
                "name": "apply_patch",
                "arguments": '{"input": "*** Begin Patch\\n*** End Patch"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "Done!"}]
    assert second["output"][0]["content"][0]["text"] == "Results: Done!"


def test_a_tool_output_that_answers_no_call_is_a_400(api, clean_upstream):
    _, first = stream(api, {"model": "fake-text", "input": "hi"})
    for body, kind in (
            ({"input": [{"type": "custom_tool_call_output", "call_id": "call_nowhere",
                         "output": "x"}]}, "custom tool call output"),
            ({"previous_response_id": first["id"], "input": [
                {"type": "function_call_output", "call_id": "call_nowhere", "output": "x"}]},
             "function call output")):
        response = api.post("/responses", json={"model": "fake-text", **body})
        assert response.status_code == 400
        assert response.json() == {"error": {
            "message": f"No tool call found for {kind} with call_id call_nowhere.",
            "type": "invalid_request_error", "param": "input", "code": None}}
    assert len(clean_upstream.requests()) == 1


def test_the_history_is_repaired_before_the_upstream_call(api, clean_upstream):
    _, final = stream(api, {"model": "fake-text", "input": [
        {"role": "user", "content": "Weather in Oslo and Paris?"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_b", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_b", "output": "rain"},
        {"role": "user", "content": "Also Rome."},
        {"role": "user", "content": "Quickly."}]})
    assert sent(clean_upstream)["messages"] == [
        {"role": "user", "content": "Weather in Oslo and Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "weather", "arguments": "{}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "aborted"},
        {"role": "tool", "tool_call_id": "call_b", "content": "rain"},
        {"role": "user", "content": "Also Rome."}, {"role": "user", "content": "Quickly."}]
    assert final["status"] == "completed"
    # nothing stored is changed: the input items are the client's
    items = api.get(f"/responses/{final['id']}/input_items", params={"order": "asc"}).json()
    assert [item["type"] for item in items["data"]] == [
        "message", "reasoning", "function_call", "function_call", "function_call_output",
        "message", "message"]


def test_phase_round_trips_and_labels_the_output(api, clean_upstream):
    events, final = stream(api, {"model": "fake-text", "input": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!", "phase": "final_answer"},
        {"role": "user", "content": "bye"}]})
    assert sent(clean_upstream)["messages"] == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "bye"}]
    assert [e["type"] for e in events][:2] == START
    added, done = [e["item"] for e in events if e["type"].startswith("response.output_item")]
    assert ("phase" in added, done["phase"]) == (False, "final_answer")
    assert final["output"] == [done]
    stored = api.get(f"/responses/{final['id']}/input_items", params={"order": "asc"}).json()
    assert [item.get("phase") for item in stored["data"]] == [None, "final_answer", None]


def test_the_openai_sdk_stream_helper_reads_a_custom_tool_call(openai_client):
    with openai_client.responses.stream(model="fake-tool-caller", tools=[PATCH_TOOL],
                                        input=f"call apply_patch {ARGUMENTS}") as events:
        deltas = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
        final = events.get_final_response()
    call = final.output[0]
    assert (type(call).__name__, call.name, call.call_id, call.input) == (
        "ResponseCustomToolCall", "apply_patch", "call_0", "*** Begin Patch\n*** End Patch")
    assert deltas == ["*** Begin ", "Patch\n*** End Patch"]


def test_text_before_a_tool_call_is_commentary(api):
    weather = {"type": "function", "name": "get_weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    events, final = stream(api, {"model": "fake-text-then-tool", "tools": [weather], "input": [
        {"role": "assistant", "content": "Ask me about the weather.", "phase": "final_answer"},
        {"role": "user", "content": "Oslo?"}]})
    assert [(i["type"], i.get("phase")) for i in final["output"]] == [
        ("message", "commentary"), ("function_call", None)]
    done = [e["item"].get("phase") for e in events if e["type"] == "response.output_item.done"]
    assert done == ["commentary", None]
