"""The Vercel AI SDK (`ai` + `@ai-sdk/openai` `.responses()`), pinned in tests/clients, under
Node against the production deployment and the fake upstream: `streamText` over a tool round
trip, and a 3-turn `generateText` chat with its default `store: true`, which sends earlier
assistant items as `item_reference`s without `previous_response_id`.

The packages are installed once per lockfile into var/node-clients/ (tests/node_clients.py)."""
from tests.node_clients import run_node


def test_a_three_turn_vercel_ai_sdk_chat_with_its_default_store(
        node_clients, production, tenant_key, clean_upstream):
    result = run_node(node_clients, "vercel_chat.mjs", production.base_url, tenant_key)
    assert result["texts"] == ["Results: 18C in Paris", "No tools.", "No tools."]
    sent = result["sent"]
    assert [body.get("previous_response_id") for body in sent] == [None] * 4
    answers = [item["id"] for item in sent[3]["input"] if item.get("type") == "item_reference"]
    first_user, call, call_output, thanks, reference_to_answer, tomorrow = (
        user_text('call get_weather {"city":"Paris"}'),
        {"type": "function_call", "call_id": "call_0", "name": "get_weather",
         "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_0", "output": "18C in Paris"},
        user_text("Thanks!"), {"type": "item_reference", "id": answers[0]},
        user_text("And tomorrow?"))
    assert [body["input"] for body in sent] == [
        [first_user],
        [first_user, call, call_output],
        [first_user, call, call_output, reference_to_answer, thanks],
        [first_user, call, call_output, reference_to_answer, thanks,
         {"type": "item_reference", "id": answers[1]}, tomorrow],
    ]
    assert answers == [result["received"][1]["output"][0]["id"],
                       result["received"][2]["output"][0]["id"]]
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": 'call get_weather {"city":"Paris"}'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "18C in Paris"},
        {"role": "assistant", "content": "Results: 18C in Paris"},
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "No tools."},
        {"role": "user", "content": "And tomorrow?"},
    ]


def user_text(text):
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}



def test_vercel_ai_sdk_streamtext_streams_a_tool_round_trip(
        node_clients, production, tenant_key, clean_upstream):
    result = run_node(node_clients, "vercel_stream.mjs", production.base_url, tenant_key)
    assert result["parts"] == [
        "start",
        "start-step", "tool-input-start", "tool-input-delta", "tool-input-delta",
        "tool-input-end", "tool-call", "tool-result", "finish-step",
        "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step",
        "finish"]
    assert result["deltas"] == ["Results: ", "18C in Paris"]
    assert (result["text"], result["finishReason"]) == ("Results: 18C in Paris", "stop")
    assert result["toolResults"] == [["18C in Paris"], []]
    first_user = user_text('call get_weather {"city":"Paris"}')
    assert [(body["stream"], body["input"]) for body in result["sent"]] == [
        (True, [first_user]),
        (True, [first_user,
                {"type": "function_call", "call_id": "call_0", "name": "get_weather",
                 "arguments": '{"city":"Paris"}'},
                {"type": "function_call_output", "call_id": "call_0",
                 "output": "18C in Paris"}]),
    ]
    assert [request["body"]["messages"] for request in clean_upstream.requests()] == [
        [{"role": "user", "content": 'call get_weather {"city":"Paris"}'}],
        [{"role": "user", "content": 'call get_weather {"city":"Paris"}'},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "call_0", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
         {"role": "tool", "tool_call_id": "call_0", "content": "18C in Paris"}],
    ]
