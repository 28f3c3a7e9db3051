"""file_search end to end on the shared production deployment, over the `vector_stores`
app (Files and Vector Stores APIs, ingestion, search) and the fake upstream's deterministic
/embeddings; without that app this module fails at import, on purpose, rather than skip.

The openai SDK uploads two files into a store, streams a response whose model calls
`file_search` and cites the best result (exact events, the `file_search_call` item with
its results included, a `file_citation`), a chain continues after it, the Agents SDK's
`FileSearchTool` (with attribute filters and its results included) in a run, and a store of
another tenant fails the call as "not found" (the response still completes)."""
import asyncio
import io
import json

import httpx

import vector_stores.search  # noqa: F401  (the stores branch; fails loudly when missing)
from agents import Agent, FileSearchTool, OpenAIResponsesModel, RunConfig, Runner
from openai import AsyncOpenAI, OpenAI
from openai.types.responses import ResponseFileSearchToolCall

from responses_app.translation.hosted_items import FUNCTIONS

from tests.invariants import check_stream
from tests.test_e2e_sdk import dumped

HANDBOOK = "Deploys happen on Tuesdays after the standup. Rollbacks need two approvals."
FAQ = "Lunch is served at noon in the kitchen on the second floor."
CALL_LINE = 'call file_search {"queries": ["when do deploys happen"]}'


FILE_SEARCH_FUNCTION = {"type": "function", "function": {
    "name": "file_search", "parameters": FUNCTIONS["file_search"]["parameters"],
    "description": FUNCTIONS["file_search"]["description"]}}
TEAMS = {"handbook.md": "ops", "faq.txt": "facilities"}
FREEZE = "When do deploys happen in December? They do not: deploys freeze."


def store_with_files(client) -> tuple[str, dict]:
    store = client.vector_stores.create(name="handbook")
    ids = {}
    for name, text in (("handbook.md", HANDBOOK), ("faq.txt", FAQ)):
        done = client.vector_stores.files.upload_and_poll(
            vector_store_id=store.id, file=(name, io.BytesIO(text.encode())),
            attributes={"team": TEAMS[name]})
        assert done.status == "completed"
        ids[name] = done.id
    return store.id, ids


def test_sdk_streams_a_file_search_that_cites_and_a_chain_continues(
        openai_client, clean_upstream):
    store_id, ids = store_with_files(openai_client)
    with openai_client.responses.stream(
            model="fake-citing-caller", input=CALL_LINE,
            tools=[{"type": "file_search", "vector_store_ids": [store_id],
                    "max_num_results": 1}],
            include=["file_search_call.results"]) as stream:
        events = dumped(list(stream))
        final = stream.get_final_response()
    with openai_client.responses.retrieve(final.id, stream=True) as replay:
        check_stream(dumped(replay))
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.file_search_call.in_progress",
        "response.file_search_call.searching", "response.file_search_call.completed",
        "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.annotation.added",
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    call = final.output[0]
    assert isinstance(call, ResponseFileSearchToolCall)
    assert (call.status, call.queries) == ("completed", ["when do deploys happen"])
    assert [(r.file_id, r.filename, r.text) for r in call.results] == [
        (ids["handbook.md"], "handbook.md", HANDBOOK)]
    assert final.output_text == "Found it [1], and more [2]."
    assert [a.model_dump() for a in final.output[1].content[0].annotations] == [
        {"type": "file_citation", "file_id": ids["handbook.md"], "filename": "handbook.md",
         "index": 9}]
    requests = clean_upstream.requests()  # the chat calls, and the embedding of each file
    # as it was ingested and of the query as it was searched
    assert [r["body"] for r in requests if r["path"] == "/v1/embeddings"] == [
        {"model": "text-embedding-3-small", "input": [text]}
        for text in (HANDBOOK, FAQ, "when do deploys happen")]
    tool_message = [r for r in requests
                    if r["path"] == "/v1/chat/completions"][1]["body"]["messages"][2]
    assert tool_message == {"role": "tool", "tool_call_id": call.id, "content": (
        'Results for "when do deploys happen":\n\n'
        f"[1] handbook.md\n{HANDBOOK}\n\n"
        "Cite a result you use by its number in square brackets, like [1].")}

    follow = openai_client.responses.create(model="fake-echo", previous_response_id=final.id,
                                            input="thanks")
    assert follow.output_text == (
        f"user: {CALL_LINE}\n"
        f'assistant.tool_calls: file_search({{"queries":["when do deploys happen"]}})\n'
        f'tool[{call.id}]: Results for "when do deploys happen":\n\n'
        f"[1] handbook.md\n{HANDBOOK}\n\n"
        "Cite a result you use by its number in square brackets, like [1].\n"
        "assistant: Found it [1], and more [2].\n"
        "user: thanks")


def test_agents_sdk_file_search_tool_in_a_run(openai_client, production, tenant_key,
                                              clean_upstream):
    """The SDK's FileSearchTool, as the SDK sends it: the store, a filter on the files'
    attributes that leaves out a file matching the query although two results are allowed,
    and the results included in the item the run returns."""
    store_id, ids = store_with_files(openai_client)
    frozen = openai_client.vector_stores.files.upload_and_poll(
        vector_store_id=store_id, file=("freeze.md", io.BytesIO(FREEZE.encode())),
        attributes={"team": "release"})
    assert frozen.status == "completed"
    sent = []

    async def record(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            sent.append(json.loads(request.content))

    async def scenario():
        client = AsyncOpenAI(base_url=production.base_url, api_key=tenant_key, max_retries=0,
                             http_client=httpx.AsyncClient(
                                 timeout=30, event_hooks={"request": [record]}))
        tool = FileSearchTool(vector_store_ids=[store_id], max_num_results=2,
                              include_search_results=True,
                              filters={"type": "eq", "key": "team", "value": "ops"})
        agent = Agent(name="Librarian", instructions="Search, then answer.", tools=[tool],
                      model=OpenAIResponsesModel("fake-citing-caller", client))
        return await Runner.run(agent, CALL_LINE, run_config=RunConfig(tracing_disabled=True))

    result = asyncio.run(scenario())
    assert [(body["tools"], body["include"]) for body in sent] == [(
        [{"type": "file_search", "vector_store_ids": [store_id], "max_num_results": 2,
          "filters": {"type": "eq", "key": "team", "value": "ops"}}],
        ["file_search_call.results"])]
    assert result.final_output == "Found it [1], and more [2]."
    assert [item.type for item in result.new_items] == ["tool_call_item", "message_output_item"]
    call = result.new_items[0].raw_item
    assert isinstance(call, ResponseFileSearchToolCall)
    assert (call.status, call.queries) == ("completed", ["when do deploys happen"])
    assert [(r.file_id, r.filename, r.attributes, r.text) for r in call.results] == [
        (ids["handbook.md"], "handbook.md", {"team": "ops"}, HANDBOOK)]
    assert [a.model_dump() for a in result.new_items[1].raw_item.content[0].annotations] == [
        {"type": "file_citation", "file_id": ids["handbook.md"], "filename": "handbook.md",
         "index": 9}]
    requests = clean_upstream.requests()
    assert [r["body"] for r in requests if r["path"] == "/v1/embeddings"] == [
        {"model": "text-embedding-3-small", "input": [text]}
        for text in (HANDBOOK, FAQ, FREEZE, "when do deploys happen")]
    first, second = [r["body"] for r in requests if r["path"] == "/v1/chat/completions"]
    assert (first["tools"], second["tools"]) == ([FILE_SEARCH_FUNCTION], [FILE_SEARCH_FUNCTION])
    assert first["messages"] == [{"role": "system", "content": "Search, then answer."},
                                 {"role": "user", "content": CALL_LINE}]
    assert second["messages"][3] == {"role": "tool", "tool_call_id": call.id, "content": (
        'Results for "when do deploys happen":\n\n'
        f"[1] handbook.md\n{HANDBOOK}\n\n"
        "Cite a result you use by its number in square brackets, like [1].")}


def test_another_tenants_store_fails_the_call_as_not_found(
        openai_client, production, other_tenant_key):
    other = OpenAI(base_url=production.base_url, api_key=other_tenant_key, max_retries=0,
                   timeout=30)
    their_store, _ = store_with_files(other)
    response = openai_client.responses.create(
        model="fake-citing-caller", input=CALL_LINE,
        tools=[{"type": "file_search", "vector_store_ids": [their_store]}])
    assert response.status == "completed"
    assert response.output[0].model_dump(mode="json", exclude_unset=True) == {
        "id": response.output[0].id, "type": "file_search_call", "status": "failed",
        "queries": ["when do deploys happen"], "results": None}


def test_a_query_the_embedding_upstream_fails_fails_the_call(openai_client, clean_upstream):
    from tests.fake_upstream import FAKE_EMBEDDING_FAILURE

    store_id, _ = store_with_files(openai_client)
    response = openai_client.responses.create(
        model="fake-citing-caller",
        input=f'call file_search {{"queries": ["{FAKE_EMBEDDING_FAILURE}"]}}',
        tools=[{"type": "file_search", "vector_store_ids": [store_id]}])
    assert response.status == "completed"
    assert response.output[0].model_dump(mode="json", exclude_unset=True) == {
        "id": response.output[0].id, "type": "file_search_call", "status": "failed",
        "queries": [FAKE_EMBEDDING_FAILURE], "results": None}
    chats = [r for r in clean_upstream.requests() if r["path"] == "/v1/chat/completions"]
    assert chats[1]["body"]["messages"][2]["content"] == (  # the model is told why
        f'The search for "{FAKE_EMBEDDING_FAILURE}" failed: The embedding upstream '
        "'default' answered 500: embedding backend exploded")
