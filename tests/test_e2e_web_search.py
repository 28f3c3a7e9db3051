"""web_search end to end on the shared production deployment (Daphne, a Celery worker,
Postgres, Redis) with its search on the fake SearXNG (tests/fake_search.py): the openai
SDK's stream of a response that searches and cites, its exact events and items, the exact
upstream requests, its stream replayed, a chain continuing after it; the Agents SDK's
WebSearchTool in a run; a tenant whose own backend (Tavily, set in the admin) serves its
searches while another tenant's stay on the deployment's; and the header naming a dropped
tool."""
import asyncio
import time

import httpx
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, WebSearchTool
from openai import AsyncOpenAI, OpenAI
from openai.types.responses import ResponseFunctionWebSearch

from responses_app.translation.hosted_items import FUNCTIONS
from tests.fake_search import PAGES, TAVILY_KEY
from tests.invariants import check_stream
from tests.test_e2e_sdk import dumped

CALL_LINE = 'call web_search {"query": "python 3.14"}'
WEB_SEARCH_FUNCTION = {"type": "function", "function": {
    "name": "web_search", "parameters": FUNCTIONS["web_search"]["parameters"],
    "description": FUNCTIONS["web_search"]["description"]}}
RESULT_TEXT = (
    'Results for "python 3.14":\n\n'
    f"[1] {PAGES[0][0]} ({PAGES[0][1]})\n{PAGES[0][2]}\n\n"
    f"[2] {PAGES[1][0]} ({PAGES[1][1]})\n{PAGES[1][2]}\n\n"
    f"[3] {PAGES[2][0]} ({PAGES[2][1]})\n{PAGES[2][2]}\n\n"
    "Cite a result you use by its number in square brackets, like [1].")
SEARCH_AND_CITE_EVENTS = [
    "response.created", "response.in_progress",
    "response.output_item.added", "response.web_search_call.in_progress",
    "response.web_search_call.searching", "response.web_search_call.completed",
    "response.output_item.done",
    "response.output_item.added", "response.content_part.added",
    "response.output_text.delta", "response.output_text.delta",
    "response.output_text.annotation.added", "response.output_text.annotation.added",
    "response.output_text.done", "response.content_part.done",
    "response.output_item.done", "response.completed"]
ANNOTATIONS = [
    {"type": "url_citation", "start_index": 9, "end_index": 12, "title": PAGES[0][0],
     "url": PAGES[0][1]},
    {"type": "url_citation", "start_index": 23, "end_index": 26, "title": PAGES[1][0],
     "url": PAGES[1][1]}]


def test_sdk_streams_a_web_search_that_cites_and_a_chain_continues(
        openai_client, clean_upstream, fake_search):
    fake_search.clear()
    with openai_client.responses.stream(
            model="fake-citing-caller", input=CALL_LINE,
            tools=[{"type": "web_search", "search_context_size": "low"}],
            include=["web_search_call.action.sources"]) as stream:
        events = dumped(list(stream))
        final = stream.get_final_response()
    with openai_client.responses.retrieve(final.id, stream=True) as replay:
        replayed = dumped(replay)  # the stored stream, resumed from the start
    check_stream(replayed)
    assert [e["type"] for e in replayed] == [e["type"] for e in events]
    assert [e["type"] for e in events] == SEARCH_AND_CITE_EVENTS
    call = final.output[0]
    assert isinstance(call, ResponseFunctionWebSearch)
    assert call.model_dump(mode="json", exclude_unset=True) == {
        "id": call.id, "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": "python 3.14",
                   "sources": [{"type": "url", "url": url} for _, url, _ in PAGES]}}
    assert final.output_text == "Found it [1], and more [2]."
    assert [a.model_dump() for a in final.output[1].content[0].annotations] == ANNOTATIONS
    assert [r["params"]["q"] for r in fake_search.requests()] == ["python 3.14"]
    first, second = [r["body"] for r in clean_upstream.requests()]
    assert first["tools"] == [WEB_SEARCH_FUNCTION]
    assert first["messages"] == [{"role": "user", "content": CALL_LINE}]
    assert second["messages"] == [
        {"role": "user", "content": CALL_LINE},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": "web_search", "arguments": '{"query":"python 3.14"}'}}]},
        {"role": "tool", "tool_call_id": call.id, "content": RESULT_TEXT}]
    stored = openai_client.responses.retrieve(final.id)
    assert stored.output[0].model_dump(mode="json", exclude_unset=True) == \
        call.model_dump(mode="json", exclude_unset=True)

    clean_upstream.clear()
    follow = openai_client.responses.create(model="fake-echo", previous_response_id=final.id,
                                            input="thanks")
    sources = "".join(f"[{n}] {url}\n\n" for n, (_, url, _) in enumerate(PAGES, 1))
    assert follow.output_text == (
        f"user: {CALL_LINE}\n"
        f'assistant.tool_calls: web_search({{"query":"python 3.14"}})\n'
        f'tool[{call.id}]: Results for "python 3.14":\n\n{sources}'
        "Cite a result you use by its number in square brackets, like [1].\n"
        "assistant: Found it [1], and more [2].\n"
        "user: thanks")


def test_agents_sdk_web_search_tool_in_a_run(production, tenant_key, clean_upstream,
                                             fake_search):
    async def scenario():
        client = AsyncOpenAI(base_url=production.base_url, api_key=tenant_key, max_retries=0,
                             http_client=httpx.AsyncClient(timeout=30))
        agent = Agent(name="Searcher", instructions="Search, then answer.",
                      tools=[WebSearchTool(filters=None, search_context_size="high",
                                           user_location={"type": "approximate",
                                                          "country": "GB"})],
                      model=OpenAIResponsesModel("fake-citing-caller", client))
        return await Runner.run(agent, CALL_LINE, run_config=RunConfig(tracing_disabled=True))

    fake_search.clear()
    result = asyncio.run(scenario())
    assert result.final_output == "Found it [1], and more [2]."
    assert [item.type for item in result.new_items] == ["tool_call_item", "message_output_item"]
    assert result.new_items[0].raw_item.action.query == "python 3.14"
    assert [r["params"] for r in fake_search.requests()] == [
        {"q": "python 3.14", "format": "json", "pageno": "1", "language": "all-GB"}]
    assert [r["body"]["tools"] for r in clean_upstream.requests()] == [[WEB_SEARCH_FUNCTION]] * 2


def test_a_dropped_tool_is_named_in_a_header_and_a_refused_one_is_a_400(api):
    response = api.post("/responses", json={
        "model": "fake-text", "input": "hi",
        "tools": [{"type": "web_search", "external_web_access": False}]})
    assert response.status_code == 200
    assert response.headers["x-gateway-dropped-tools"] == "web_search"
    assert response.json()["tools"] == []
    refused = api.post("/responses", json={"model": "fake-text", "input": "hi",
                                            "tools": [{"type": "image_generation"}]})
    assert (refused.status_code, refused.json()) == (400, {"error": {
        "message": "Hosted tool 'image_generation' is not supported by this gateway: this "
                   "gateway has no backend for it (it needs an image model). An administrator "
                   "can list 'image_generation' in HOSTED_TOOLS_DROP_UNAVAILABLE to have it "
                   "dropped instead.",
        "type": "invalid_request_error", "param": "tools[0].type", "code": "unsupported_tool"}})


def test_a_forced_search_is_forced_once(api, clean_upstream):
    response = api.post("/responses", json={
        "model": "fake-citing-caller", "input": CALL_LINE, "store": False,
        "tools": [{"type": "web_search_preview"}], "tool_choice": {"type": "web_search_preview"}})
    assert response.status_code == 200
    body = response.json()
    assert [item["type"] for item in body["output"]] == ["web_search_call", "message"]
    assert body["tool_choice"] == {"type": "web_search_preview"}
    assert [r["body"]["tool_choice"] for r in clean_upstream.requests()] == [
        {"type": "function", "function": {"name": "web_search"}}, "auto"]


def test_a_background_response_searches_and_resumes(openai_client):
    created = openai_client.responses.create(
        model="fake-citing-caller", input=CALL_LINE, background=True,
        tools=[{"type": "web_search"}])
    for _ in range(300):  # bounded: 300 polls of 0.05 s
        polled = openai_client.responses.retrieve(created.id)
        if polled.status not in ("queued", "in_progress"):
            break
        time.sleep(0.05)
    assert (polled.status, [item.type for item in polled.output]) == (
        "completed", ["web_search_call", "message"])
    assert polled.output[0].action.model_dump(exclude_unset=True) == {
        "type": "search", "query": "python 3.14"}
    with openai_client.responses.retrieve(created.id, stream=True, starting_after=1) as stream:
        tail = dumped(stream)
    assert [e["type"] for e in tail] == SEARCH_AND_CITE_EVENTS[2:]


ADD_TAVILY_BACKEND = """
from hosted_tools.models import WebSearchBackend
from responses_app.models import Tenant
backend = WebSearchBackend(name="carol-tavily", tenant=Tenant.objects.get(name="carol"),
                           kind="tavily", url="{url}")
backend.set_api_key("{key}")
backend.save()
"""


def test_a_tenants_own_backend_serves_it_and_no_other(production, openai_client,
                                                      fake_search):
    carol = OpenAI(base_url=production.base_url, api_key=production.new_api_key("carol"),
                   max_retries=0, timeout=30)
    production.manage("shell", "-c", ADD_TAVILY_BACKEND.format(url=fake_search.tavily_url,
                                                               key=TAVILY_KEY))
    fake_search.clear()
    tools = [{"type": "web_search", "search_context_size": "low",
              "filters": {"allowed_domains": ["python.org"]},
              "user_location": {"type": "approximate", "country": "FR"}}]
    response = carol.responses.create(model="fake-citing-caller", input=CALL_LINE,
                                      tools=tools, include=["web_search_call.action.sources"])
    theirs = openai_client.responses.create(model="fake-citing-caller", input=CALL_LINE,
                                            tools=tools)
    assert [(r["method"], r["path"]) for r in fake_search.requests()] == [
        ("POST", "/tavily/search"), ("GET", "/search")]
    tavily = fake_search.requests()[0]
    assert (tavily["headers"]["authorization"], tavily["body"]) == (f"Bearer {TAVILY_KEY}", {
        "query": "python 3.14", "topic": "general", "search_depth": "basic", "max_results": 3,
        "include_answer": False, "include_raw_content": False,
        "include_domains": ["python.org"], "country": "france"})
    call = response.output[0]
    assert call.model_dump(mode="json", exclude_unset=True) == {
        "id": call.id, "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": "python 3.14",
                   "sources": [{"type": "url", "url": url} for _, url, _ in PAGES[:2]]}}
    assert response.output_text == theirs.output_text == "Found it [1], and more [2]."
    assert [a.model_dump() for a in response.output[1].content[0].annotations] == ANNOTATIONS
