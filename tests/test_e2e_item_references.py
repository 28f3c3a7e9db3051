"""`item_reference` on the production path (Daphne, Celery, Postgres, Redis): a reference
names any item of the tenant's stored responses and conversations, with or without
`previous_response_id` or `conversation`; anything else is the same 400 `item_not_found`.
The upstream requests the fake upstream recorded show what each reference resolved to."""
import json
import uuid

import httpx

WEATHER_TOOL = {"type": "function", "name": "get_weather", "strict": False,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def unique(prefix):
    return f"{prefix}_{uuid.uuid4().hex}"


def user_text(text):
    """A user message as the Vercel AI SDK sends it."""
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def ref(item_id):
    return {"type": "item_reference", "id": item_id}


def create(client, body):
    response = client.post("/responses", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def not_found_body(item_id, index):
    return {"error": {"message": f"Item with id '{item_id}' not found.",
                      "type": "invalid_request_error", "param": f"input[{index}].id",
                      "code": "item_not_found"}}


def assert_not_found(response, item_id, index):
    assert response.status_code == 400, response.text
    assert response.json() == not_found_body(item_id, index)


def test_a_vercel_ai_sdk_chat_references_earlier_items_without_a_chain(api, clean_upstream):
    """The Vercel AI SDK `.responses()` with its default store: true resends user messages
    inline and earlier assistant messages (and, before `@ai-sdk/openai` 3, function calls)
    as references, with no previous_response_id; a tool round trip, then a user turn.
    (test_e2e_vercel_ai_sdk.py drives the SDK itself.)"""
    first_user = user_text('call get_weather {"city": "Paris"}')
    base = {"model": "fake-tool-caller", "tools": [WEATHER_TOOL]}
    called = create(api, {**base, "input": [first_user]})
    call = called["output"][0]
    assert (call["type"], call["call_id"], call["name"]) == (
        "function_call", "call_0", "get_weather")
    output = {"type": "function_call_output", "call_id": "call_0", "output": "18C, sunny"}
    answered = create(api, {**base, "input": [first_user, ref(call["id"]), output]})
    answer = answered["output"][0]
    assert answer["content"][0]["text"] == "Results: 18C, sunny"
    create(api, {**base, "input": [first_user, ref(call["id"]), output, ref(answer["id"]),
                                   user_text("Thanks! And tomorrow?")]})
    requests = clean_upstream.requests()
    assert len(requests) == 3
    assert requests[2]["body"]["messages"] == [
        {"role": "user", "content": 'call get_weather {"city": "Paris"}'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "18C, sunny"},
        {"role": "assistant", "content": "Results: 18C, sunny"},
        {"role": "user", "content": "Thanks! And tomorrow?"},
    ]
    assert requests[1]["body"]["messages"] == requests[2]["body"]["messages"][:3]


def test_a_reference_outside_the_chain_mixes_with_previous_response_id(api, clean_upstream):
    first = create(api, {"model": "fake-echo", "input": "one"})
    second = create(api, {"model": "fake-echo", "input": "two",
                          "previous_response_id": first["id"]})
    aside = create(api, {"model": "fake-echo", "input": "aside"})
    create(api, {"model": "fake-echo", "previous_response_id": second["id"], "input": [
        ref(aside["output"][0]["id"]), ref(first["output"][0]["id"]),
        {"role": "user", "content": "three"}]})
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "user: one"},
        {"role": "user", "content": "two"},
        # the chain's last answer and the two referenced ones, merged (consecutive
        # assistant messages go upstream as one)
        {"role": "assistant", "content": "user: one\nassistant: user: one\nuser: two\n"
                                         "user: aside\nuser: one"},
        {"role": "user", "content": "three"},
    ]


def test_a_conversation_item_is_referenceable_from_outside_the_conversation(
        api, clean_upstream):
    intro = unique("msg")
    conversation = api.post("/conversations", json={"items": [
        {"type": "message", "role": "user", "content": "I am Ada.", "id": intro}]})
    assert conversation.status_code == 200, conversation.text
    outside = create(api, {"model": "fake-echo",
                           "input": [ref(intro), {"role": "user", "content": "Who am I?"}]})
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "I am Ada."},
        {"role": "user", "content": "Who am I?"},
    ]
    items = api.get(f"/responses/{outside['id']}/input_items", params={"order": "asc"}).json()
    assert [item["id"] for item in items["data"]][0] == intro
    assert items["data"][0]["content"] == [{"type": "input_text", "text": "I am Ada."}]


def test_another_tenants_items_are_not_found_as_an_unknown_id(
        api, production, other_tenant_key, clean_upstream):
    theirs_id = unique("msg")
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {other_tenant_key}"}) as other:
        theirs = create(other, {"model": "fake-text", "input": [
            {"role": "user", "content": "secret", "id": theirs_id}]})
        conversation_item = unique("msg")
        assert other.post("/conversations", json={"items": [
            {"role": "user", "content": "secret", "id": conversation_item}]}).status_code == 200
    for item_id in [theirs_id, theirs["output"][0]["id"], conversation_item, unique("msg")]:
        response = api.post("/responses", json={"model": "fake-echo", "input": [
            {"role": "user", "content": "hi"}, ref(item_id)]})
        assert_not_found(response, item_id, 1)
    assert clean_upstream.requests() == [clean_upstream.requests()[0]]


def test_a_store_false_responses_items_are_not_referenceable(api, clean_upstream):
    input_id = unique("msg")
    unstored = create(api, {"model": "fake-text", "store": False, "input": [
        {"role": "user", "content": "forget me", "id": input_id}]})
    for item_id in [input_id, unstored["output"][0]["id"]]:
        response = api.post("/responses", json={"model": "fake-echo", "input": [ref(item_id)]})
        assert_not_found(response, item_id, 0)
    assert len(clean_upstream.requests()) == 1


def test_a_running_responses_items_are_referenceable_once_it_finished(api, clean_upstream):
    """Its output is not stored while it runs: none of its items can be referenced until
    its result is, then all of them can (as the response's own items become retrievable)."""
    input_id = unique("msg")
    body = {"model": "bench-6-300", "stream": True, "input": [
        {"role": "user", "content": "count", "id": input_id}]}
    with api.stream("POST", "/responses", json=body) as streaming:
        lines = streaming.iter_lines()
        output_id = _first_output_item_id(lines)
        for item_id in [input_id, output_id]:
            response = api.post("/responses", json={"model": "fake-echo",
                                                    "input": [ref(item_id)]})
            assert_not_found(response, item_id, 0)
        rest = "\n".join(lines)
    assert '"type":"response.completed"' in rest
    create(api, {"model": "fake-echo", "input": [ref(input_id), ref(output_id)]})
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "count"},
        {"role": "assistant", "content": "w0 w1 w2 w3 w4 w5 "},
    ]


def _first_output_item_id(lines) -> str:
    """Read SSE lines up to the first `response.output_item.added`; its item's id."""
    for line in lines:
        if line.startswith("data: {"):
            event = json.loads(line[len("data: "):])
            if event["type"] == "response.output_item.added":
                return event["item"]["id"]
    raise AssertionError("the stream ended before an output item was added")


def test_a_referenced_reasoning_item_keeps_its_stored_content(api):
    reasoned = create(api, {"model": "fake-reasoning", "input": "hi",
                            "include": ["reasoning.encrypted_content"]})
    reasoning = reasoned["output"][0]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    follow = create(api, {"model": "fake-text", "input": [
        {"role": "user", "content": "hi"}, ref(reasoning["id"]),
        {"role": "user", "content": "more"}]})
    items = api.get(f"/responses/{follow['id']}/input_items",
                    params={"order": "asc"}).json()["data"]
    assert items[1] == reasoning
    assert items[1]["content"][0]["text"] == "Let me think. The user greets me."
