"""Checks of one request at a time: a stream, a chain, an item reference and a function tool
round trip. Each takes the SDK client and the model name, raises CheckFailed (or the SDK's
error) on a failure, and returns a short detail for the table."""
import json

from openai import BadRequestError

from client_checks.probes import (TOOL_PROMPT, WEATHER_TOOL, CheckFailed, dump, expect,
                                  expect_completed)
from client_checks.stream_rules import check_events


def check_streaming(client, model: str) -> str:
    """`responses.stream`: events keep the stream rules, the deltas make the final text."""
    with client.responses.stream(model=model, input="Say hello in one short sentence.") as stream:
        events = [dump(event) for event in stream]
        final = stream.get_final_response()
    check_events(events)
    expect_completed(final, "the streamed response")
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    expect(final.output_text and deltas == final.output_text,
           "the text deltas do not make the final output_text")
    return f"{len(events)} events"


def check_chain(client, model: str) -> str:
    """`previous_response_id`: the follow-up runs on the first response's history."""
    first = client.responses.create(model=model, input="My favourite colour is teal. Say OK.")
    expect_completed(first, "the first response")
    second = client.responses.create(model=model, input="What is my favourite colour?",
                                     previous_response_id=first.id)
    expect_completed(second, "the chained response")
    expect(second.previous_response_id == first.id,
           f"previous_response_id is {second.previous_response_id!r}, not {first.id!r}")
    expect(second.output_text, "the chained response has no text")
    return "2 responses"


def check_item_reference(client, model: str) -> str:
    """An `item_reference` to a stored item resolves; an unknown id is a 400."""
    first = client.responses.create(model=model, input="Say hello.")
    expect_completed(first, "the referenced response")
    message = next((item for item in first.output if item.type == "message"), None)
    expect(message is not None, "the first response has no message to reference")
    second = client.responses.create(model=model, input=[
        {"type": "item_reference", "id": message.id},
        {"role": "user", "content": "Say it again, shorter."}])
    expect_completed(second, "the response with the reference")
    try:
        client.responses.create(model=model, input=[
            {"type": "item_reference", "id": "msg_check_clients_unknown"}])
    except BadRequestError as error:
        expect(error.code == "item_not_found",
               f"an unknown reference gave code {error.code!r}, not 'item_not_found'")
        return "a stored item resolves, an unknown one is item_not_found"
    raise CheckFailed("an unknown item reference was accepted")


def check_function_tool(client, model: str) -> str:
    """A function call, its output sent back on the chain, and the model's answer."""
    called = client.responses.create(
        model=model, input=TOOL_PROMPT, tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "name": "get_weather"})
    expect_completed(called, "the response that should call the tool")
    calls = [item for item in called.output if item.type == "function_call"]
    expect(calls and all(call.name == "get_weather" for call in calls),
           f"no get_weather call in the output: {[item.type for item in called.output]}")
    try:
        arguments = [json.loads(call.arguments) for call in calls]
    except ValueError:
        raise CheckFailed("the call's arguments are not JSON") from None
    answer = client.responses.create(
        model=model, previous_response_id=called.id, tools=[WEATHER_TOOL],
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": "18C and sunny"} for call in calls])
    expect_completed(answer, "the answer to the tool output")
    expect(answer.output_text, "the answer to the tool output has no text")
    return f"get_weather({json.dumps(arguments[0])})"
