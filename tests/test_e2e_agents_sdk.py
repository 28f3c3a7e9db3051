"""The OpenAI Agents SDK (`openai-agents`, pinned in the test extra) against the production
deployment and the fake upstream: a two-turn run with a function tool in each of the SDK's
ways to carry history: the full input list (`result.to_input_list()`), `previous_response_id`,
`auto_previous_response_id` and a conversation (`conversation_id`).

Every mode must reach the model with the same message list; the tests assert it exactly, with
the final outputs and the request shape the SDK sent (recorded by an httpx event hook)."""
import asyncio
import json

import httpx
import pytest
from agents import (Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI

set_tracing_disabled(True)  # the SDK's tracing exports to OpenAI's servers otherwise

FIRST = 'call get_weather {"city":"Paris"}'
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_0", "type": "function",
     "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}
TURN_ONE = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": FIRST},
    CALL,
    {"role": "tool", "tool_call_id": "call_0", "content": "18C in Paris"},
]
TURN_TWO = [*TURN_ONE, {"role": "assistant", "content": "Results: 18C in Paris"},
            {"role": "user", "content": "Thanks!"}]
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "title": "get_weather_args",
                   "properties": {"city": {"type": "string", "title": "City"}},
                   "required": ["city"], "additionalProperties": False},
    "strict": True}}


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18C in {city}"


class SdkRun:
    """An Agent on the deployment's /v1 and the Responses API bodies the SDK sent."""

    def __init__(self, base_url: str, api_key: str):
        self.sent: list[dict] = []
        self.http = httpx.AsyncClient(event_hooks={"request": [self._record]}, timeout=30)
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                                  http_client=self.http)
        self.agent = Agent(name="Weather", instructions="Answer briefly.", tools=[get_weather],
                           model=OpenAIResponsesModel("fake-tool-caller", self.client))

    async def _record(self, request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.sent.append(json.loads(request.content))

    async def run(self, prompt, **options):
        return await Runner.run(self.agent, prompt, run_config=RunConfig(tracing_disabled=True),
                                **options)

    def chain_fields(self) -> list[tuple]:
        """Per request the SDK sent: (previous_response_id given?, conversation, input size)."""
        return [(bool(body.get("previous_response_id")), body.get("conversation"),
                 len(body["input"])) for body in self.sent]


@pytest.fixture
def sdk(production, tenant_key):
    return SdkRun(production.base_url, tenant_key)


def upstream_messages(upstream) -> list[list[dict]]:
    return [request["body"]["messages"] for request in upstream.requests()]


def assert_turns(upstream):
    """Turn one (a call, then its answer) and turn two, as the model saw them."""
    assert upstream_messages(upstream) == [TURN_ONE[:2], TURN_ONE, TURN_TWO]
    assert [request["body"]["tools"] for request in upstream.requests()] == [[WEATHER_TOOL]] * 3


def test_agents_sdk_carries_the_full_history_itself(sdk, clean_upstream):
    async def scenario():
        first = await sdk.run(FIRST)
        second = await sdk.run(first.to_input_list() + [{"role": "user", "content": "Thanks!"}])
        return first, second

    first, second = asyncio.run(scenario())
    assert (first.final_output, second.final_output) == ("Results: 18C in Paris", "No tools.")
    assert sdk.chain_fields() == [(False, None, 1), (False, None, 3), (False, None, 5)]
    assert_turns(clean_upstream)


def test_agents_sdk_chains_turns_with_previous_response_id(sdk, clean_upstream):
    async def scenario():
        first = await sdk.run(FIRST)
        second = await sdk.run("Thanks!", previous_response_id=first.last_response_id)
        return first, second

    first, second = asyncio.run(scenario())
    assert (first.final_output, second.final_output) == ("Results: 18C in Paris", "No tools.")
    # inside a run the SDK resends the whole turn; the second run sends only the new message
    assert sdk.chain_fields() == [(False, None, 1), (False, None, 3), (True, None, 1)]
    assert sdk.sent[2]["previous_response_id"] == first.last_response_id
    assert_turns(clean_upstream)


def test_agents_sdk_auto_previous_response_id_chains_inside_the_run(sdk, clean_upstream):
    async def scenario():
        first = await sdk.run(FIRST, auto_previous_response_id=True)
        second = await sdk.run("Thanks!", previous_response_id=first.last_response_id,
                               auto_previous_response_id=True)
        return first, second

    first, second = asyncio.run(scenario())
    assert (first.final_output, second.final_output) == ("Results: 18C in Paris", "No tools.")
    # the tool output goes alone, chained to the response that called the tool
    assert sdk.chain_fields() == [(False, None, 1), (True, None, 1), (True, None, 1)]
    assert [body["input"][0].get("type") for body in sdk.sent[1:]] == [
        "function_call_output", None]
    assert_turns(clean_upstream)


def test_agents_sdk_keeps_history_in_a_conversation(sdk, openai_client, clean_upstream):
    conversation = openai_client.conversations.create()

    async def scenario():
        first = await sdk.run(FIRST, conversation_id=conversation.id)
        second = await sdk.run("Thanks!", conversation_id=conversation.id)
        return first, second

    first, second = asyncio.run(scenario())
    assert (first.final_output, second.final_output) == ("Results: 18C in Paris", "No tools.")
    assert [fields[1] for fields in sdk.chain_fields()] == [conversation.id] * 3
    assert [fields[2] for fields in sdk.chain_fields()] == [1, 1, 1]
    assert_turns(clean_upstream)
    items = openai_client.conversations.items.list(conversation.id, order="asc").data
    assert [(item.type, getattr(item, "role", None)) for item in items] == [
        ("message", "user"), ("function_call", None), ("function_call_output", None),
        ("message", "assistant"), ("message", "user"), ("message", "assistant")]
