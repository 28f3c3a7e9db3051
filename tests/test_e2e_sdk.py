"""The openai SDK as the judge: `responses.stream(...).get_final_response()` and
`responses.create(...)` against the production path."""
import pytest

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
