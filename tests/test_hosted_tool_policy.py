"""Nothing silently dropped: every hosted tool type of OpenAI's schema runs, is refused with
a 400 naming it and the setting, or is dropped (named in dropped_tools, a header and a
metric); a tool_choice that leaves the model nothing to call is a 400."""
import pytest
from django.conf import settings

from hosted_tools.catalog import HOSTED_TYPES, UNBACKED_TYPES, WEB_SEARCH_TYPES
from hosted_tools.dropped import dropped_tools_header
from hosted_tools.tenant_tools import settle_web_search
from observability.metrics import HOSTED_TOOLS_DROPPED
from responses_app.create.client_tool_items import CLIENT_TOOL_TYPES
from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest


def parse(**fields):
    """Parsed, then settled as the front door settles it for a tenant with no search backend
    of its own in the admin: served by WEB_SEARCH_BACKEND's, or by none when it is empty."""
    request = parse_create_request({"model": "m", "input": "hi", **fields})
    settle_web_search(request, bool(settings.WEB_SEARCH_BACKEND))
    return request


def refusal(**fields) -> dict:
    with pytest.raises(InvalidRequest) as raised:
        parse(**fields)
    error = raised.value
    return {"message": error.message, "param": error.param, "code": error.code}


def schema_tool_types() -> set[str]:
    """The tool types of the installed openai SDK's ToolParam."""
    from typing import get_args, get_type_hints

    from openai.types.responses.tool_param import ToolParam

    types = set()
    for param in get_args(ToolParam):
        types |= set(get_args(get_type_hints(param)["type"]))
    return types


def test_the_catalog_names_every_tool_type_of_the_openai_schema():
    schema_types = schema_tool_types()
    assert schema_types - set(HOSTED_TYPES) == {"function", "mcp", "custom", "namespace",
                                                "tool_search", *CLIENT_TOOL_TYPES}
    assert set(HOSTED_TYPES) - schema_types == set()


def test_the_behaviour_doc_has_one_row_per_tool_type():
    import re
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "behaviour.md").read_text()
    table = doc[doc.index("| tool type | what happens |"):]
    table = table[:table.index("\n\n")]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.MULTILINE)
    assert sorted(rows) == sorted(schema_tool_types())


@pytest.mark.parametrize("kind", sorted(UNBACKED_TYPES))
def test_a_tool_without_backend_is_refused_naming_it_and_the_setting(kind):
    assert refusal(tools=[{"type": kind}]) == {
        "message": f"Hosted tool '{kind}' is not supported by this gateway: this gateway has "
                   f"no backend for it (it needs {UNBACKED_TYPES[kind]}). An administrator "
                   f"can list '{kind}' in HOSTED_TOOLS_DROP_UNAVAILABLE to have it dropped "
                   f"instead.",
        "param": "tools[0].type", "code": "unsupported_tool"}


@pytest.mark.parametrize("kind", WEB_SEARCH_TYPES)
def test_web_search_without_backend_is_dropped_by_default(kind, settings):
    settings.WEB_SEARCH_BACKEND = ""
    request = parse(tools=[{"type": kind}, {"type": "function", "name": "f"}])
    assert [t["type"] for t in request.params["tools"]] == ["function"]
    assert request.dropped_tools == [kind]


def test_web_search_refused_when_not_in_the_drop_setting(settings):
    settings.WEB_SEARCH_BACKEND = ""
    settings.HOSTED_TOOLS_DROP_UNAVAILABLE = ["code_interpreter"]  # its index still counts
    assert refusal(tools=[{"type": "code_interpreter"}, {"type": "function", "name": "f"},
                          {"type": "web_search"}]) == {
        "message": "Hosted tool 'web_search' is not supported by this gateway: no search "
                   "backend serves this tenant (set WEB_SEARCH_BACKEND, or add a web search "
                   "backend in the admin). An administrator can list 'web_search' in "
                   "HOSTED_TOOLS_DROP_UNAVAILABLE to have it dropped instead.",
        "param": "tools[2].type", "code": "unsupported_tool"}


def test_parsing_keeps_web_search_until_the_tenant_is_known(settings):
    """Parsing knows no tenant: the tool stays, its place noted, until the front door
    settles it (a backend serves the tenant: kept; none: dropped, and named)."""
    settings.WEB_SEARCH_BACKEND = ""
    body = {"model": "m", "input": "hi", "tools": [
        {"type": "code_interpreter"}, {"type": "web_search"}]}
    settings.HOSTED_TOOLS_DROP_UNAVAILABLE = ["code_interpreter", "web_search"]
    kept = parse_create_request(body)
    assert ([t["type"] for t in kept.params["tools"]], kept.dropped_tools,
            kept.web_search_param) == (["web_search"], ["code_interpreter"], "tools[1]")
    settle_web_search(kept, True)
    assert [t["type"] for t in kept.params["tools"]] == ["web_search"]
    dropped = parse_create_request(body)
    settle_web_search(dropped, False)
    assert (dropped.params["tools"], dropped.dropped_tools, dropped.web_search_param) == (
        [], ["code_interpreter", "web_search"], None)


def test_an_unbacked_tool_listed_in_the_setting_is_dropped(settings):
    settings.HOSTED_TOOLS_DROP_UNAVAILABLE = ["code_interpreter", "image_generation"]
    request = parse(tools=[{"type": "code_interpreter", "container": {"type": "auto"}},
                           {"type": "image_generation"}, {"type": "code_interpreter"}])
    assert (request.params["tools"], request.dropped_tools) == (
        [], ["code_interpreter", "image_generation", "code_interpreter"])


def test_offline_web_search_is_dropped_even_with_a_backend(settings):
    """Codex sends external_web_access: false; there is no cache to search offline."""
    settings.WEB_SEARCH_BACKEND = "searxng"
    request = parse(tools=[{"type": "web_search", "external_web_access": False}])
    assert (request.params["tools"], request.dropped_tools) == ([], ["web_search"])


def test_web_search_with_a_backend_is_kept_normalized(settings):
    settings.WEB_SEARCH_BACKEND = "searxng"
    request = parse(tools=[{"type": "web_search", "search_context_size": "high",
                            "filters": {"allowed_domains": ["https://Docs.Python.org/3/",
                                                            "example.org"]},
                            "user_location": {"type": "approximate", "country": "FR",
                                              "city": "Lyon"}}])
    assert request.params["tools"] == [{
        "type": "web_search", "search_context_size": "high",
        "user_location": {"type": "approximate", "city": "Lyon", "country": "FR",
                          "region": None, "timezone": None},
        "filters": {"allowed_domains": ["docs.python.org", "example.org"]}}]
    assert request.dropped_tools == []


def test_file_search_filters_of_openai_shape_pass_the_shape_check(settings):
    """Checked before availability: with file search disabled, a valid filter reaches the
    refusal of the tool (not a shape error)."""
    settings.FILE_SEARCH_ENABLED = False
    assert refusal(tools=[{"type": "file_search", "vector_store_ids": ["vs_1"], "filters": {
        "type": "or", "filters": [{"type": "eq", "key": "team", "value": "ops"},
                                  {"type": "and", "filters": [
                                      {"type": "nin", "key": "year", "value": [2024, 2025]},
                                      {"type": "gte", "key": "pages", "value": 3.5}]}]}}])[
        "code"] == "unsupported_tool"


def test_file_search_is_refused_when_disabled(settings):
    settings.FILE_SEARCH_ENABLED = False
    assert refusal(tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}]) == {
        "message": "Hosted tool 'file_search' is not supported by this gateway: vector stores "
                   "are not enabled on this deployment (FILE_SEARCH_ENABLED). An administrator "
                   "can list 'file_search' in HOSTED_TOOLS_DROP_UNAVAILABLE to have it dropped "
                   "instead.",
        "param": "tools[0].type", "code": "unsupported_tool"}


@pytest.mark.parametrize("tool, param", [
    ({"type": "file_search"}, "tools[0].vector_store_ids"),
    ({"type": "file_search", "vector_store_ids": []}, "tools[0].vector_store_ids"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 0},
     "tools[0].max_num_results"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "filters": {"key": "a"}},
     "tools[0].filters.type"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"],
      "filters": {"type": "and", "filters": [{"type": "eq", "key": "team", "value": "ops"},
                                             {"type": "in", "key": "year", "value": 2026}]}},
     "tools[0].filters.filters[1].value"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"],
      "filters": {"type": "or", "filters": []}}, "tools[0].filters.filters"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"],
      "filters": {"type": "gt", "value": 3}}, "tools[0].filters.key"),
    ({"type": "web_search", "search_context_size": "huge"}, "tools[0].search_context_size"),
    ({"type": "web_search", "filters": {"allowed_domains": "example.org"}},
     "tools[0].filters.allowed_domains"),
])
def test_a_hosted_tool_of_the_wrong_shape_is_a_400(tool, param, settings):
    settings.WEB_SEARCH_BACKEND = "searxng"
    settings.FILE_SEARCH_ENABLED = False  # refused later: the shape is checked first
    assert refusal(tools=[tool])["param"] == param


def test_required_with_only_dropped_tools_is_a_400(settings):
    settings.WEB_SEARCH_BACKEND = ""
    assert refusal(tools=[{"type": "web_search"}], tool_choice="required") == {
        "message": "tool_choice 'required' needs at least one tool the model can call, and "
                   "this request has none (hosted tools this gateway does not run are "
                   "dropped).", "param": "tool_choice", "code": "invalid_value"}


def test_naming_a_dropped_hosted_tool_is_a_400(settings):
    settings.WEB_SEARCH_BACKEND = ""
    assert refusal(tools=[{"type": "web_search_preview"},
                          {"type": "function", "name": "f"}],
                   tool_choice={"type": "web_search_preview"}) == {
        "message": "Tool choice 'web_search_preview' names a tool this request does not offer "
                   "(or this gateway dropped).", "param": "tool_choice", "code": "invalid_value"}


def test_naming_a_missing_function_is_a_400():
    assert refusal(tools=[{"type": "function", "name": "f"}],
                   tool_choice={"type": "function", "name": "g"}) == {
        "message": "Tool choice 'function' with name 'g' not found in 'tools' parameter.",
        "param": "tool_choice", "code": "invalid_value"}


def test_choices_that_leave_a_tool_are_accepted(settings):
    settings.WEB_SEARCH_BACKEND = "searxng"
    for tools, choice in [
        ([{"type": "web_search"}], "required"),
        ([{"type": "web_search"}], {"type": "web_search"}),
        ([{"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g"}]}],
         {"type": "function", "name": "g"}),
        ([{"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp"}],
         "required"),
        ([{"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp"}],
         {"type": "function", "name": "docs__fetch"}),
        ([], "auto"),
    ]:
        assert parse(tools=tools, tool_choice=choice).params["tool_choice"] == choice


def test_the_header_names_each_type_once_and_each_drop_is_counted():
    before = HOSTED_TOOLS_DROPPED.labels(type="code_interpreter")._value.get()
    assert dropped_tools_header(["code_interpreter", "web_search", "code_interpreter"]) == {
        "X-Gateway-Dropped-Tools": "code_interpreter, web_search"}
    assert HOSTED_TOOLS_DROPPED.labels(type="code_interpreter")._value.get() == before + 2
    assert dropped_tools_header([]) == {}


def test_the_echoed_hosted_tools_are_valid_for_the_openai_types(settings):
    from responses_app.translation.resource import new_response_resource
    from tests.oracles import validate_response

    settings.WEB_SEARCH_BACKEND = "brave"
    params = parse(tools=[
        {"type": "web_search_preview", "search_context_size": "low",
         "user_location": {"type": "approximate", "city": "Oslo"}},
        {"type": "function", "name": "f"}], tool_choice={"type": "web_search_preview"}).params
    response = new_response_resource(
        response_id="resp_1", created_at=1700000000, model="m", params=params,
        instructions=None, previous_response_id=None, store=True, background=False,
        status="completed")
    validate_response(response)
    assert response["tools"][0] == {
        "type": "web_search_preview", "search_context_size": "low",
        "user_location": {"type": "approximate", "city": "Oslo", "country": None,
                          "region": None, "timezone": None}}
    assert response["tool_choice"] == {"type": "web_search_preview"}


def test_hosted_call_items_are_accepted_as_input():
    request = parse(input=[
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "q",
                    "sources": [{"type": "url", "url": "https://a.org/"}]}},
        {"type": "file_search_call", "id": "fs_2", "status": "failed", "queries": ["x"]},
        {"role": "user", "content": "and?"}])
    assert request.input_items[:2] == [
        {"id": "ws_1", "type": "web_search_call", "status": "completed",
         "action": {"type": "search", "query": "q",
                    "sources": [{"type": "url", "url": "https://a.org/"}]}},
        {"id": "fs_2", "type": "file_search_call", "status": "failed", "queries": ["x"],
         "results": None}]


@pytest.mark.parametrize("item, param", [
    ({"type": "web_search_call", "action": "search"}, "input[0].action"),
    ({"type": "web_search_call", "action": {"type": "search", "sources": ["u"]}},
     "input[0].action.sources"),
    ({"type": "file_search_call", "queries": "x"}, "input[0].queries"),
    ({"type": "file_search_call", "status": "done"}, "input[0].status"),
])
def test_a_hosted_call_item_of_the_wrong_shape_is_a_400(item, param):
    assert refusal(input=[item])["param"] == param


def test_system_checks_refuse_an_unusable_search_setup(settings):
    from hosted_tools.checks import drop_list_names_hosted_tools, web_search_backend_is_usable

    cases = [("bing", "", ""), ("searxng", "", ""), ("brave", "", ""),
             ("searxng", "http://search.lan", ""), ("brave", "", "key"), ("", "", "")]
    found = []
    for backend, url, key in cases:
        settings.WEB_SEARCH_BACKEND, settings.WEB_SEARCH_URL = backend, url
        settings.WEB_SEARCH_API_KEY = key
        found.append([e.id for e in web_search_backend_is_usable(None)])
    assert found == [["hosted_tools.E001"], ["hosted_tools.E002"], ["hosted_tools.E003"],
                     [], [], []]
    settings.HOSTED_TOOLS_DROP_UNAVAILABLE = ["web_search", "websearch"]
    assert [e.msg for e in drop_list_names_hosted_tools(None)] == [
        "HOSTED_TOOLS_DROP_UNAVAILABLE names unknown tool types: websearch."]
