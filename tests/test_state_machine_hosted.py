"""The pure translator with hosted tools: a model's call to `web_search` / `file_search`
becomes a `web_search_call` / `file_search_call` item with its events, the results go back
to the model numbered, and the answer's `[n]` become url_citation / file_citation
annotations. Exact event lists; every stream checked by the invariants and the openai
SDK's types. No I/O here."""
from openai.types.responses import (
    ResponseFileSearchToolCall, ResponseFunctionWebSearch, ResponseOutputMessage,
)

from responses_app.create_request import parse_create_request
from responses_app.translation.citations import annotations_for
from responses_app.translation.hosted_items import (
    FileResult, WebResult, hosted_items_as_function_items,
)
from responses_app.translation.resource import new_response_resource
from responses_app.translation.sse import EventStamper
from responses_app.translation.state_machine import ResponseTranslator, TranslatorOptions
from tests.oracles import check_sse_stream
from tests.test_state_machine import sequential_ids
from tests.upstream_scenarios import CREATED, scenario_for

HOSTED = {"web_search": "web_search", "file_search": "file_search"}
WEB = [WebResult("Python 3.14 released", "https://www.python.org/downloads/release/python-3140/",
                 "Python 3.14.0 is the newest major release."),
       WebResult("What's new in 3.14", "https://docs.python.org/3/whatsnew/3.14.html",
                 "Template strings, deferred annotations.")]
FILES = [FileResult("file-a", "handbook.md", 0.91, {"team": "ops"}, "Deploys happen on Tuesdays."),
         FileResult("file-b", "faq.txt", 0.42, {}, "Ask in #ops.")]


def translator(include=()):
    params = parse_create_request({"model": "m", "input": "hi"}).params
    response = new_response_resource(
        response_id="resp_test", created_at=CREATED, model="m", params=params,
        instructions=None, previous_response_id=None, store=True, background=False,
        status="in_progress")
    return ResponseTranslator(response, TranslatorOptions(
        ids=sequential_ids(), now=lambda: CREATED, hosted_tools=HOSTED,
        hosted_include=frozenset(include)))


def run(call_line: str, results, include=(), error=None):
    """One turn calling a hosted tool, its results, one answering turn: (events, final, text)."""
    t, stamper = translator(include), EventStamper()
    raw = stamper.render(t.start())
    for chunk in scenario_for("fake-citing-caller", {"messages": [
            {"role": "user", "content": call_line}]}).chunks:
        raw += stamper.render(t.feed(chunk))
    events, to_run = t.end_turn()
    raw += stamper.render(events)
    assert [item["id"] for item in to_run] == ["ws_0" if "web" in call_line else "fs_0"]
    events, kind, queries = t.hosted_searching(to_run[0])
    raw += stamper.render(events)
    events, text = t.hosted_call_done(to_run[0], results, error)
    raw += stamper.render(events)
    for chunk in scenario_for("fake-citing-caller", {"messages": [
            {"role": "tool", "content": text}]}).chunks:
        raw += stamper.render(t.feed(chunk))
    raw += stamper.render(t.finish())
    events, final = check_sse_stream(raw + b"data: [DONE]\n\n")
    return events, final, (kind, queries, text)


ANSWER_EVENTS = [
    "response.output_item.added", "response.content_part.added",
    "response.output_text.delta", "response.output_text.delta",
    "response.output_text.annotation.added", "response.output_text.annotation.added",
    "response.output_text.done", "response.content_part.done",
    "response.output_item.done", "response.completed"]


def test_a_web_search_call_its_events_item_and_citations():
    events, final, (kind, queries, text) = run(
        'call web_search {"query": "python 3.14 release"}', WEB,
        include=["web_search_call.action.sources"])
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.web_search_call.in_progress",
        "response.web_search_call.searching", "response.web_search_call.completed",
        "response.output_item.done", *ANSWER_EVENTS]
    assert events[2]["item"] == {"id": "ws_0", "type": "web_search_call",
                                 "status": "in_progress",
                                 "action": {"type": "search", "query": ""}}
    assert (kind, queries) == ("web_search", ["python 3.14 release"])
    assert text == (
        'Results for "python 3.14 release":\n\n'
        "[1] Python 3.14 released (https://www.python.org/downloads/release/python-3140/)\n"
        "Python 3.14.0 is the newest major release.\n\n"
        "[2] What's new in 3.14 (https://docs.python.org/3/whatsnew/3.14.html)\n"
        "Template strings, deferred annotations.\n\n"
        "Cite a result you use by its number in square brackets, like [1].")
    call = {"id": "ws_0", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": "python 3.14 release", "sources": [
                {"type": "url", "url": "https://www.python.org/downloads/release/python-3140/"},
                {"type": "url", "url": "https://docs.python.org/3/whatsnew/3.14.html"}]}}
    assert final["output"][0] == call
    ResponseFunctionWebSearch.model_validate(call)
    annotations = [
        {"type": "url_citation", "start_index": 9, "end_index": 12,
         "title": "Python 3.14 released",
         "url": "https://www.python.org/downloads/release/python-3140/"},
        {"type": "url_citation", "start_index": 23, "end_index": 26,
         "title": "What's new in 3.14", "url": "https://docs.python.org/3/whatsnew/3.14.html"}]
    message = final["output"][1]
    assert message["content"][0]["text"] == "Found it [1], and more [2]."
    assert message["content"][0]["annotations"] == annotations
    assert [e["annotation"] for e in events if e["type"].endswith("annotation.added")] == \
        annotations
    assert [e["annotation_index"] for e in events
            if e["type"].endswith("annotation.added")] == [0, 1]
    ResponseOutputMessage.model_validate(message)


def test_web_search_sources_only_when_included():
    _, final, _ = run('call web_search {"query": "q"}', WEB)
    assert final["output"][0]["action"] == {"type": "search", "query": "q"}


def test_a_file_search_call_with_results_included_and_file_citations():
    events, final, (kind, queries, text) = run(
        'call file_search {"queries": ["deploy day", "who to ask"]}', FILES,
        include=["file_search_call.results"])
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.file_search_call.in_progress",
        "response.file_search_call.searching", "response.file_search_call.completed",
        "response.output_item.done", *ANSWER_EVENTS]
    assert events[2]["item"] == {"id": "fs_0", "type": "file_search_call",
                                 "status": "in_progress", "queries": [], "results": None}
    assert (kind, queries) == ("file_search", ["deploy day", "who to ask"])
    assert text == ('Results for "deploy day", "who to ask":\n\n'
                    "[1] handbook.md\nDeploys happen on Tuesdays.\n\n[2] faq.txt\nAsk in #ops.\n\n"
                    "Cite a result you use by its number in square brackets, like [1].")
    call = {"id": "fs_0", "type": "file_search_call", "status": "completed",
            "queries": ["deploy day", "who to ask"], "results": [
                {"file_id": "file-a", "filename": "handbook.md", "score": 0.91,
                 "attributes": {"team": "ops"}, "text": "Deploys happen on Tuesdays."},
                {"file_id": "file-b", "filename": "faq.txt", "score": 0.42, "attributes": {},
                 "text": "Ask in #ops."}]}
    assert final["output"][0] == call
    ResponseFileSearchToolCall.model_validate(call)
    assert final["output"][1]["content"][0]["annotations"] == [
        {"type": "file_citation", "file_id": "file-a", "filename": "handbook.md", "index": 9},
        {"type": "file_citation", "file_id": "file-b", "filename": "faq.txt", "index": 23}]
    ResponseOutputMessage.model_validate(final["output"][1])


def test_file_search_results_are_null_unless_included():
    _, final, _ = run('call file_search {"queries": ["x"]}', FILES)
    assert final["output"][0]["results"] is None


def test_a_failed_search_closes_failed_and_the_model_is_told():
    events, final, (_, _, text) = run('call file_search {"queries": ["x"]}', None,
                                      error="vector store 'vs_9' not found")
    assert [e["type"] for e in events][2:6] == [
        "response.output_item.added", "response.file_search_call.in_progress",
        "response.file_search_call.searching", "response.output_item.done"]
    assert final["output"][0] == {"id": "fs_0", "type": "file_search_call", "status": "failed",
                                  "queries": ["x"], "results": None}
    assert text == "The search for \"x\" failed: vector store 'vs_9' not found"
    assert final["output"][1]["content"][0]["annotations"] == []  # nothing to cite


def test_a_run_failing_mid_search_closes_the_call_incomplete():
    t, stamper = translator(), EventStamper()
    raw = stamper.render(t.start())
    for chunk in scenario_for("fake-tool-caller", {"messages": [
            {"role": "user", "content": 'call web_search {"query": "q"}'}]}).chunks:
        raw += stamper.render(t.feed(chunk))
    events, to_run = t.end_turn()
    raw += stamper.render(events)
    raw += stamper.render(t.hosted_searching(to_run[0])[0])
    raw += stamper.render(t.fail("server_error", "boom"))
    events, final = check_sse_stream(raw + b"data: [DONE]\n\n")
    assert [e["type"] for e in events][2:] == [
        "response.output_item.added", "response.web_search_call.in_progress",
        "response.web_search_call.searching", "response.output_item.done", "response.failed"]
    assert final["output"][0]["status"] == "incomplete"


def test_citations_markers_lists_and_quoted_urls():
    sources = {1: WEB[0], 2: FILES[0], 3: WEB[1]}
    text = "See [1, 3] and [2]; [7] is no result. Also https://docs.python.org/3/whatsnew/3.14.html"
    assert annotations_for(text, sources) == [
        {"type": "url_citation", "start_index": 4, "end_index": 10,
         "title": WEB[0].title, "url": WEB[0].url},
        {"type": "url_citation", "start_index": 4, "end_index": 10,
         "title": WEB[1].title, "url": WEB[1].url},
        {"type": "file_citation", "file_id": "file-a", "filename": "handbook.md", "index": 15},
        {"type": "url_citation", "start_index": 43, "end_index": 87,
         "title": WEB[1].title, "url": WEB[1].url}]
    assert annotations_for("no sources [1]", {}) == []


def test_hosted_items_replay_as_the_call_and_its_result():
    items = [
        {"type": "message", "role": "user", "content": "q"},
        {"id": "ws_1", "type": "web_search_call", "status": "completed",
         "action": {"type": "search", "query": "python", "sources": [
             {"type": "url", "url": "https://python.org/"}]}},
        {"id": "fs_2", "type": "file_search_call", "status": "completed",
         "queries": ["deploy"], "results": None},
    ]
    assert hosted_items_as_function_items(items) == [
        items[0],
        {"type": "function_call", "id": "ws_1", "call_id": "ws_1", "name": "web_search",
         "arguments": '{"query":"python"}', "status": "completed"},
        {"type": "function_call_output", "call_id": "ws_1", "status": "completed",
         "output": 'Results for "python":\n\n[1] https://python.org/\n\n'
                   "Cite a result you use by its number in square brackets, like [1]."},
        {"type": "function_call", "id": "fs_2", "call_id": "fs_2", "name": "file_search",
         "arguments": '{"queries":["deploy"]}', "status": "completed"},
        {"type": "function_call_output", "call_id": "fs_2", "status": "completed",
         "output": "Searched for 'deploy' (the results of this search were not kept)."},
    ]


def test_the_queries_of_a_call_in_every_shape_a_model_sends():
    from responses_app.translation.hosted_items import queries_of

    assert [queries_of("web_search", a) for a in (
        '{"query": " python "}', '{"queries": ["a", " ", "b"]}', '"bare"', "not json",
        "{}", '{"query": 7}', "[1]", "")] == [
        ["python"], ["a", "b"], ["bare"], ["not json"], [], [], [], []]
