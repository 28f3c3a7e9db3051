"""The openai SDK as the judge: `responses.stream(...).get_final_response()` and
`responses.create(...)` against the production path: streams, tools, chains, item
references, background polling, stream resume (`starting_after`) and cancel."""
import time

import pytest

from tests.invariants import check_cancelled_stream, check_stream
from tests.upstream_scenarios import SCENARIOS, text_of

REASONING_PIECES = sum(1 for c in SCENARIOS["fake-reasoning"].chunks
                       for choice in c["choices"] if choice["delta"].get("reasoning_content"))
TEXT_PIECES = sum(1 for c in SCENARIOS["fake-reasoning"].chunks
                  for choice in c["choices"] if choice["delta"].get("content"))

WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather by city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"], "additionalProperties": False},
                "strict": True}


def test_sdk_stream_text(openai_client):
    with openai_client.responses.stream(model="fake-text", input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == text_of(SCENARIOS["fake-text"])
    assert final.output_text == text_of(SCENARIOS["fake-text"])
    assert final.status == "completed"


def test_sdk_stream_reasoning(openai_client):
    with openai_client.responses.stream(model="fake-reasoning", input="hi",
                                        reasoning={"effort": "low"}) as stream:
        final = stream.get_final_response()
    reasoning, message = final.output
    assert reasoning.type == "reasoning"
    assert reasoning.content[0].text == "Let me think. The user greets me."
    assert final.output_text == text_of(SCENARIOS["fake-reasoning"])


def test_sdk_stream_reasoning_as_summary(openai_client):
    with openai_client.responses.stream(model="fake-reasoning", input="hi",
                                        reasoning={"summary": "auto"}) as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert types == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.reasoning_summary_part.added",
        *["response.reasoning_summary_text.delta"] * REASONING_PIECES,
        "response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        *["response.output_text.delta"] * TEXT_PIECES,
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed",
    ]
    assert final.output[0].summary[0].text == "Let me think. The user greets me."


def test_sdk_stream_tool_calls_then_answer(openai_client, clean_upstream):
    with openai_client.responses.stream(model="fake-tools", input="weather?",
                                        tools=[WEATHER_TOOL]) as stream:
        final = stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, c.name) for c in calls] == [("call_abc", "get_weather"),
                                                    ("call_def", "get_time")]
    sent = clean_upstream.requests()[-1]["body"]
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "parameters": WEATHER_TOOL["parameters"],
        "description": "Weather by city", "strict": True}}]
    assert sent["tool_choice"] == "auto"
    answer = openai_client.responses.create(
        model="fake-echo", previous_response_id=final.id, tools=[WEATHER_TOOL],
        input=[{"type": "function_call_output", "call_id": c.call_id, "output": f"out-{c.name}"}
               for c in calls])
    assert answer.status == "completed"
    assert answer.output_text == (
        "user: weather?\n"
        'assistant.tool_calls: get_weather({"city": "Paris"})\n'
        'assistant.tool_calls: get_time({"tz": "Europe/Paris"})\n'
        "tool[call_abc]: out-get_weather\n"
        "tool[call_def]: out-get_time")
    assert clean_upstream.requests()[-1]["body"]["messages"][1]["tool_calls"] == [
        {"id": "call_abc", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_def", "type": "function",
         "function": {"name": "get_time", "arguments": '{"tz": "Europe/Paris"}'}},
    ]


def test_sdk_create_non_streaming(openai_client):
    response = openai_client.responses.create(model="fake-text", input="hi", temperature=0.2)
    assert response.output_text == text_of(SCENARIOS["fake-text"])
    assert response.temperature == 0.2
    assert openai_client.responses.retrieve(response.id).output_text == response.output_text


def test_sdk_sees_upstream_429_as_rate_limit_error(openai_client):
    from openai import RateLimitError

    with pytest.raises(RateLimitError) as raised:
        openai_client.responses.create(model="fake-429", input="hi")
    assert raised.value.status_code == 429
    assert raised.value.code == "rate_limit_exceeded"


def test_agents_sdk_style_messages_without_type(openai_client, clean_upstream):
    response = openai_client.responses.create(
        model="fake-echo", instructions="Be brief.", tools=[], include=[],
        input=[{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
               {"role": "user", "content": [{"type": "input_text", "text": "three"}]}])
    assert response.output_text == "system: Be brief.\nuser: one\nassistant: two\nuser: three"


def dumped(events) -> list[dict]:
    return [event.model_dump(mode="json", exclude_unset=True, warnings=False)
            for event in events]


def test_sdk_chain_item_reference_and_input_items(openai_client, clean_upstream):
    first = openai_client.responses.create(model="fake-echo", input="one")
    second = openai_client.responses.create(model="fake-echo", input="two",
                                            previous_response_id=first.id)
    third = openai_client.responses.create(model="fake-echo", input=[
        {"type": "item_reference", "id": first.output[0].id},
        {"role": "user", "content": "three"}])
    assert (first.output_text, second.previous_response_id, third.previous_response_id) == (
        "user: one", first.id, None)
    assert [request["body"]["messages"] for request in clean_upstream.requests()] == [
        [{"role": "user", "content": "one"}],
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "user: one"},
         {"role": "user", "content": "two"}],
        [{"role": "assistant", "content": "user: one"}, {"role": "user", "content": "three"}],
    ]
    listed = openai_client.responses.input_items.list(third.id, order="asc").data
    assert [(item.type, item.role, item.content[0].text) for item in listed] == [
        ("message", "assistant", "user: one"), ("message", "user", "three")]


def test_sdk_background_polls_to_completed_then_resumes_its_stream(openai_client):
    created = openai_client.responses.create(model="bench-12-10", input="bg", background=True)
    assert (created.status, created.background, created.output) == ("queued", True, [])
    for _ in range(300):  # bounded: 300 polls of 0.1 s
        polled = openai_client.responses.retrieve(created.id)
        if polled.status not in ("queued", "in_progress"):
            break
        time.sleep(0.1)
    assert (polled.status, polled.output_text) == ("completed", "".join(
        f"w{i} " for i in range(12)))
    with openai_client.responses.retrieve(created.id, stream=True) as stream:
        whole = dumped(stream)
    assert check_stream(whole)["output"] == dumped([polled])[0]["output"]
    with openai_client.responses.retrieve(created.id, stream=True, starting_after=5) as stream:
        tail = dumped(stream)
    assert tail == whole[6:]


def test_sdk_cancels_a_background_response_mid_run(openai_client, clean_upstream):
    model = "bench-50-20-held3-sdk-cancel"
    with openai_client.responses.create(model=model, input="cancel me", background=True,
                                        stream=True) as stream:
        events = []
        for event in stream:  # the upstream holds after 3 words: cancel once they came
            events.append(event)
            if [e.type for e in events].count("response.output_text.delta") == 3:
                cancelled = openai_client.responses.cancel(events[0].response.id)
        events = dumped(events)
    assert cancelled.status == "cancelled"
    output = check_cancelled_stream(events)
    streamed = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert streamed == "w0 w1 w2 "
    stored = openai_client.responses.retrieve(cancelled.id)
    assert (stored.status, dumped([stored])[0]["output"]) == ("cancelled", output)
    assert openai_client.responses.cancel(cancelled.id).status == "cancelled"
    clean_upstream.release(model)
