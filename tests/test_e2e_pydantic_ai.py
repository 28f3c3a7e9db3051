"""pydantic-ai (`pydantic-ai-slim[openai]`, pinned in the test extra) against the production
deployment and the fake upstream: Agents on `OpenAIResponsesModel` (over HTTP, and over the
Responses WebSocket its `openai_transport='websocket'` opens) and on `OpenAIChatModel` (Chat
Completions), each on an `OpenAIProvider` with the gateway's base_url and an API key.

Every HTTP exchange goes through a recording httpx transport that tees the answer as the
client reads it: the requests pydantic-ai sent are asserted exactly, every Responses stream
goes through the shared checker (framing, the openai and Open Responses schemas, the
invariants: tests/oracles.check_sse_stream) and every whole response through
validate_response; the fake upstream's log shows what the model saw."""
import asyncio
import json

import httpx2
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import RunUsage

from tests.oracles import check_sse_stream, validate_response
from tests.upstream_scenarios import HELLO

SYSTEM = {"role": "system", "content": "Answer briefly."}
ASK = 'call weather {"city":"Paris"}'
WEATHER = {"name": "weather", "description": "The weather in a city.", "strict": True,
           "parameters": {"additionalProperties": False, "required": ["city"], "type": "object",
                          "properties": {"city": {"type": "string"}}}}
CALL = {"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_0", "type": "function",
    "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "call_0", "content": "18C in Paris"}
OUTPUT = {"type": "function_call_output", "call_id": "call_0", "output": "18C in Paris"}


class _Tee(httpx2.AsyncByteStream):
    """The answer's bytes as the client reads them, copied into `sink`."""

    def __init__(self, inner, sink: bytearray):
        self.inner, self.sink = inner, sink

    async def __aiter__(self):
        async for chunk in self.inner:
            self.sink.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class Recorder(httpx2.AsyncBaseTransport):
    """Forwards to the deployment; keeps (path, sent JSON body, status, answer bytes)."""

    def __init__(self):
        self.inner = httpx2.AsyncHTTPTransport()
        self.exchanges: list[tuple[str, dict, int, bytearray]] = []

    async def handle_async_request(self, request):
        sent = json.loads(await request.aread())
        response = await self.inner.handle_async_request(request)
        answer = bytearray()
        self.exchanges.append((request.url.path, sent, response.status_code, answer))
        return httpx2.Response(response.status_code, headers=response.headers,
                               stream=_Tee(response.stream, answer),
                               extensions=response.extensions)

    def sent(self) -> list[dict]:  # the JSON bodies, in order
        return [sent for _, sent, _, _ in self.exchanges]

    def responses(self) -> list[dict]:
        """Each /v1/responses answer checked (a stream by the shared checker, a whole
        response by both schemas); the final response objects."""
        finals = []
        for path, sent, status, answer in self.exchanges:
            assert (path, status) == ("/v1/responses", 200)
            if sent["stream"]:
                finals.append(check_sse_stream(bytes(answer))[1])
            else:
                finals.append(json.loads(answer))
                validate_response(finals[-1])
        return finals


class Client:
    """pydantic-ai Agents on the deployment's /v1, recording what they exchanged."""

    def __init__(self, base_url: str, api_key: str):
        self.recorder = Recorder()
        self.provider = OpenAIProvider(base_url=base_url, api_key=api_key, http_client=(
            httpx2.AsyncClient(transport=self.recorder, timeout=30)))

    def agent(self, model_class, model: str, settings=None, **options) -> Agent:
        return Agent(model_class(model, provider=self.provider, settings=settings),
                     instructions="Answer briefly.", **options)


@pytest.fixture
def client(production, tenant_key, clean_upstream):
    return Client(production.base_url, tenant_key)


def upstream_messages(upstream) -> list[list[dict]]:
    return [request["body"]["messages"] for request in upstream.requests()]


def weather_tool(seen: list):
    def weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return f"18C in {city}"

    return weather


async def streamed(agent: Agent, prompt: str) -> tuple[list[str], object]:
    """`run_stream`: every text delta as it came (no debouncing), and the output."""
    async with agent.run_stream(prompt) as stream:
        deltas = [delta async for delta in stream.stream_text(delta=True, debounce_by=None)]
        return deltas, await stream.get_output()


def said_hello(agent: Agent):
    """A run and a streamed run of `agent` on `fake-text`: both say HELLO, the run with the
    fake's exact usage; the run's result."""
    async def scenario():
        return await agent.run("hi"), await streamed(agent, "hi")

    run, (deltas, output) = asyncio.run(scenario())
    assert (run.output, deltas, output) == ("".join(HELLO), HELLO, "".join(HELLO))
    assert run.usage == RunUsage(requests=1, input_tokens=12, output_tokens=5,
                                 cache_read_tokens=4, details={"reasoning_tokens": 0})
    return run


def test_responses_model_runs_and_streams_text(client, clean_upstream):
    run = said_hello(client.agent(OpenAIResponsesModel, "fake-text"))
    whole, stream = client.recorder.responses()
    assert run.response.provider_response_id == whole["id"]
    assert [item["content"][0]["text"] for item in (whole["output"][0], stream["output"][0])] == [
        "".join(HELLO)] * 2
    asked = {"model": "fake-text", "input": [{"role": "user", "content": "hi"}],
             "instructions": "Answer briefly."}
    assert client.recorder.sent() == [{**asked, "stream": False}, {**asked, "stream": True}]
    assert upstream_messages(clean_upstream) == [[SYSTEM, {"role": "user", "content": "hi"}]] * 2


@pytest.mark.parametrize("streaming", [False, True])
def test_responses_model_runs_a_function_tool(client, clean_upstream, streaming):
    """The fake model calls `weather` (its arguments streamed in two pieces), the Agent runs
    it and sends the whole turn back; the model answers with the tool's result."""
    seen = []
    agent = client.agent(OpenAIResponsesModel, "fake-tool-caller", tools=[weather_tool(seen)])
    if streaming:
        deltas, output = asyncio.run(streamed(agent, ASK))
        assert deltas == ["Results: ", "18C in Paris"]
    else:
        output = asyncio.run(agent.run(ASK)).output
    assert (seen, output) == (["Paris"], "Results: 18C in Paris")
    call, answer = client.recorder.responses()
    assert [item["type"] for item in call["output"] + answer["output"]] == [
        "function_call", "message"]
    user = {"role": "user", "content": ASK}
    asked = {"model": "fake-tool-caller", "stream": streaming, "instructions": "Answer briefly.",
             "tool_choice": "auto", "tools": [{**WEATHER, "type": "function"}]}
    assert client.recorder.sent() == [
        {**asked, "input": [user]},
        {**asked, "input": [user, {"type": "function_call", "call_id": "call_0", "name": "weather",
                                   "arguments": '{"city":"Paris"}'}, OUTPUT]}]
    assert upstream_messages(clean_upstream) == [[SYSTEM, user], [SYSTEM, user, CALL, RESULT]]
    assert [request["body"]["tools"] for request in clean_upstream.requests()] == [
        [{"type": "function", "function": WEATHER}]] * 2


def test_responses_model_chains_a_tool_turn_with_previous_response_id(client, clean_upstream):
    """`openai_previous_response_id='auto'`: the tool's output goes alone, chained to the
    response that called the tool; the gateway rebuilds the turn for the model."""
    seen = []
    agent = client.agent(OpenAIResponsesModel, "fake-tool-caller", tools=[weather_tool(seen)],
                         settings={"openai_previous_response_id": "auto"})
    output = asyncio.run(agent.run(ASK)).output
    assert (seen, output) == (["Paris"], "Results: 18C in Paris")
    call, answer = client.recorder.responses()
    assert answer["previous_response_id"] == call["id"]
    assert [(body.get("previous_response_id"), body["input"])
            for body in client.recorder.sent()] == [
        (None, [{"role": "user", "content": ASK}]), (call["id"], [OUTPUT])]
    assert upstream_messages(clean_upstream)[-1] == [
        SYSTEM, {"role": "user", "content": ASK}, CALL, RESULT]


def test_responses_model_streams_reasoning_as_thinking(client, clean_upstream):
    """A reasoning backend (`reasoning_content` deltas) with `openai_reasoning_summary`:
    pydantic-ai gets a ThinkingPart from the summary events, then the text."""
    agent = client.agent(OpenAIResponsesModel, "fake-reasoning", settings={
        "openai_reasoning_effort": "low", "openai_reasoning_summary": "auto"})

    async def scenario():
        async with agent.run_stream("hi") as stream:
            return await stream.get_output(), stream.all_messages()[-1]

    output, response = asyncio.run(scenario())
    reasoning, message = client.recorder.responses()[0]["output"]
    assert (output, [(type(part).__name__, part.content, part.id) for part in response.parts]) == (
        "Hi there!", [("ThinkingPart", "Let me think. The user greets me.", reasoning["id"]),
                      ("TextPart", "Hi there!", message["id"])])
    assert response.usage.output_reasoning_tokens == 4
    assert client.recorder.sent()[0]["reasoning"] == {"effort": "low", "summary": "auto"}
    assert clean_upstream.requests()[0]["body"]["reasoning_effort"] == "low"


class City(BaseModel):
    city: str
    temperature: int


class Answer(BaseModel):
    answer: int


def test_responses_model_structured_output(client, clean_upstream):
    """pydantic-ai's default tool output (a `final_result` tool the model must call) and its
    native output (`text.format` a JSON schema, the upstream's `response_format`)."""
    by_tool = client.agent(OpenAIResponsesModel, "fake-tool-caller", output_type=City)
    native = client.agent(OpenAIResponsesModel, "fake-json", output_type=NativeOutput(Answer))

    async def scenario():
        return (await by_tool.run('call final_result {"city":"Paris","temperature":18}'),
                await native.run("the answer?"))

    city, answer = asyncio.run(scenario())
    assert (city.output, answer.output) == (City(city="Paris", temperature=18), Answer(answer=42))
    client.recorder.responses()
    schema = {"properties": {"answer": {"type": "integer"}}, "required": ["answer"],
              "type": "object", "additionalProperties": False}
    final_result = {"name": "final_result", "strict": True,
                    "description": "The final response which ends this conversation",
                    "parameters": {"properties": {"city": {"type": "string"},
                                                  "temperature": {"type": "integer"}},
                                   "required": ["city", "temperature"], "type": "object",
                                   "additionalProperties": False}}
    sent = client.recorder.sent()
    assert (sent[0]["tool_choice"], sent[0]["tools"]) == (
        "required", [{**final_result, "type": "function"}])
    assert sent[1]["text"] == {"format": {"type": "json_schema", "name": "Answer",
                                          "schema": schema, "strict": True}}
    first, second = clean_upstream.requests()
    assert (first["body"]["tool_choice"], first["body"]["tools"]) == (
        "required", [{"type": "function", "function": final_result}])
    assert second["body"]["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Answer", "schema": schema, "strict": True}}


@pytest.mark.parametrize("transport", ["http", "websocket"])
def test_responses_model_carries_message_history(client, openai_client, clean_upstream,
                                                 transport):
    """A second run given the first's messages: over HTTP pydantic-ai resends them; over the
    Responses WebSocket it chains to the first response (`previous_response_id`)."""
    settings = {"openai_transport": "websocket"} if transport == "websocket" else None
    agent = client.agent(OpenAIResponsesModel, "fake-echo", settings=settings)

    async def scenario():
        first = await agent.run("one")
        return first, await agent.run("two", message_history=first.all_messages())

    first, second = asyncio.run(scenario())
    echoed = "system: Answer briefly.\nuser: one"
    assert (first.output, second.output) == (
        echoed, f"{echoed}\nassistant: {echoed}\nuser: two")
    one, two = {"role": "user", "content": "one"}, {"role": "user", "content": "two"}
    assert upstream_messages(clean_upstream) == [
        [SYSTEM, one], [SYSTEM, one, {"role": "assistant", "content": echoed}, two]]
    ids = [run.response.provider_response_id for run in (first, second)]
    stored = [openai_client.responses.retrieve(response_id) for response_id in ids]
    chained = ids[0] if transport == "websocket" else None
    assert [response.previous_response_id for response in stored] == [None, chained]
    if transport == "http":
        assert [body["input"] for body in client.recorder.sent()] == [
            [one], [one, {"role": "assistant", "content": echoed}, two]]
        client.recorder.responses()
    else:
        assert client.recorder.exchanges == []  # all of it went over the socket


def test_chat_model_runs_and_streams_text(client, clean_upstream):
    said_hello(client.agent(OpenAIChatModel, "fake-text"))
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    assert client.recorder.sent() == [
        {"model": "fake-text", "stream": False, "messages": messages},
        {"model": "fake-text", "stream": True, "messages": messages,
         "stream_options": {"include_usage": True}}]
    assert [(path, status) for path, _, status, _ in client.recorder.exchanges] == [
        ("/v1/chat/completions", 200)] * 2
    assert upstream_messages(clean_upstream) == [messages] * 2
