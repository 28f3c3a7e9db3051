"""The tool search the gateway runs, pure parts: how a query matches tools (tool_ranking),
the create body's tool and items, the function offered upstream, the call's item and the
output's events from the state machine, and both as history for the next turn."""
import pytest

from hosted_tools.tool_ranking import rank, words
from hosted_tools.tool_search import Candidate, _as_tools, _words
from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request
from responses_app.translation.state_machine import ResponseTranslator, TranslatorOptions
from tests.test_client_tools import call_piece
from tests.test_state_machine import chunk, sequential_ids

SEARCH_FUNCTION = {"type": "function", "function": {
    "name": "tool_search", "description": "Searches for more tools to use; the tools found are "
    "available from the next turn on.", "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What the tools should do."}},
        "required": ["query"], "additionalProperties": False}}}
LOOKUP = {"type": "function", "name": "lookup", "description": "Find an order.",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
          "strict": True, "defer_loading": True}


def build(**fields):
    request = parse_create_request({"model": "m", "input": "hi", **fields})
    return build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[], max_tokens_param="max_tokens")


# --- matching ----------------------------------------------------------------------------------

def test_words_split_names_and_drop_plural_s():
    assert words("getWeatherForecasts list_open-orders v2Address") == [
        "get", "weather", "forecast", "list", "open", "order", "v2", "address"]


def test_rank_keeps_the_best_sharing_a_word_ties_in_order():
    documents = [words("list invoices"), words("get weather forecast"),
                 words("delete weather forecast"), words("get invoice"), words("ping")]
    assert rank("get the weather forecast", documents, 3) == [1, 2, 3]
    assert rank("weather", documents, 5) == [1, 2]
    assert rank("nothing matches", documents, 5) == []
    assert rank("", documents, 5) == []


def test_a_tool_is_matched_by_its_name_description_group_and_parameters():
    tool = {"name": "refund", "description": "Give money back.", "input_schema": {
        "type": "object", "properties": {"order_id": {"description": "The order."}}}}
    assert _words(Candidate("mcp", {"server_label": "shop"}, tool)) == [
        "refund", "give", "money", "back", "shop", "order", "id", "the", "order"]


def test_found_tools_are_grouped_where_their_group_first_ranked():
    crm = {"type": "namespace", "name": "crm", "description": "CRM.", "tools": []}
    shop = {"type": "mcp", "server_label": "shop", "allowed_tools": None}
    found = [Candidate("mcp", shop, {"name": "refund"}), Candidate("function", None, LOOKUP),
             Candidate("namespace", crm, {"name": "a"}), Candidate("mcp", shop, {"name": "pay"})]
    assert _as_tools(found) == [{**shop, "allowed_tools": ["refund", "pay"]}, LOOKUP,
                                {**crm, "tools": [{"name": "a"}]}]


# --- the create body ---------------------------------------------------------------------------

def test_a_tool_search_runs_on_the_server_unless_the_client_says_so():
    assert parse_create_request({"model": "m", "input": "hi", "tools": [
        {"type": "tool_search"}]}).params["tools"] == [
        {"type": "tool_search", "execution": "server", "description": None, "parameters": None}]


@pytest.mark.parametrize("tools, param, message", [
    ([{"type": "tool_search", "parameters": {"type": "object"}}], "tools[0].parameters",
     "'tools[0].parameters' applies to a tool search the client runs; the gateway's search "
     "takes a 'query'."),
    ([{"type": "tool_search"}, {"type": "tool_search", "execution": "client"}], "tools",
     "At most one 'tool_search' tool per request, and no function or custom tool named "
     "'tool_search' beside it (it is offered to the model as a function of that name)."),
    ([{"type": "tool_search"}, {"type": "namespace", "name": "crm", "tools": [
        {**LOOKUP, "defer_loading": "no"}]}], "tools[1].tools[0].defer_loading",
     "'tools[1].tools[0].defer_loading' must be a boolean."),
])
def test_bad_tool_search_tools_are_refused(tools, param, message):
    with pytest.raises(InvalidRequest) as refused:
        parse_create_request({"model": "m", "input": "hi", "tools": tools})
    assert (refused.value.param, refused.value.message) == (param, message)


def test_the_server_search_items_sent_again_are_taken_with_their_mcp_tools():
    items = parse_create_request({"model": "m", "input": [
        {"type": "tool_search_call", "id": "tsc_1", "call_id": None, "execution": "server",
         "arguments": {"query": "q"}, "status": "completed"},
        {"type": "tool_search_output", "id": "tso_1", "call_id": None, "execution": "server",
         "tools": [{"type": "mcp", "server_label": "shop", "allowed_tools": ["pay"]}],
         "status": "completed"}]}).input_items
    assert items == [
        {"id": "tsc_1", "type": "tool_search_call", "call_id": None, "execution": "server",
         "arguments": {"query": "q"}, "status": "completed"},
        {"id": "tso_1", "type": "tool_search_output", "call_id": None, "execution": "server",
         "tools": [{"type": "mcp", "server_label": "shop", "allowed_tools": ["pay"]}],
         "status": "completed"}]
    with pytest.raises(InvalidRequest) as refused:
        parse_create_request({"model": "m", "input": [
            {"type": "tool_search_output", "call_id": "c", "execution": "client",
             "tools": [{"type": "mcp", "server_label": "shop", "allowed_tools": ["pay"]}]}]})
    assert refused.value.param == "input[0].tools[0].type"


# --- upstream and back -------------------------------------------------------------------------

def test_the_search_is_offered_and_deferred_functions_are_not():
    chat = build(tools=[{"type": "tool_search"}, LOOKUP])
    assert chat.body["tools"] == [SEARCH_FUNCTION]
    assert chat.client_tools == {"tool_search": "tool_search:server"}


def test_the_call_is_a_server_search_item_handed_back_to_run_then_its_output_added():
    translator = ResponseTranslator({"output": []}, TranslatorOptions(
        ids=sequential_ids(), client_tools={"tool_search": "tool_search:server"}))
    events = translator.feed(call_piece("tool_search", '{"query": "orders"}'))
    events += translator.feed(chunk({}, "tool_calls"))
    done, to_run = translator.end_turn()
    call = {"id": "tsc_0", "type": "tool_search_call", "call_id": None, "execution": "server",
            "arguments": {"query": "orders"}, "status": "completed"}
    assert events == [{"type": "response.output_item.added", "output_index": 0,
                       "item": {**call, "arguments": {}, "status": "in_progress"}}]
    assert done == [{"type": "response.output_item.done", "output_index": 0, "item": call}]
    assert to_run == [call]
    output = {"id": "tso_1", "type": "tool_search_output", "call_id": None,
              "execution": "server", "tools": [LOOKUP], "status": "completed"}
    assert translator.tool_search_done([LOOKUP]) == [
        {"type": "response.output_item.added", "output_index": 1,
         "item": {**output, "tools": [], "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 1, "item": output}]


def test_the_search_goes_back_upstream_as_a_call_by_its_item_id_and_loads_its_tools():
    chat = build(tools=[{"type": "tool_search"}, LOOKUP], input=[
        {"role": "user", "content": "where is my order?"},
        {"type": "tool_search_call", "id": "tsc_1", "execution": "server",
         "arguments": {"query": "orders"}, "status": "completed"},
        {"type": "tool_search_output", "id": "tso_1", "execution": "server",
         "tools": [LOOKUP, {"type": "mcp", "server_label": "shop", "allowed_tools": ["pay"]}],
         "status": "completed"}])
    assert [t["function"]["name"] for t in chat.body["tools"]] == ["tool_search", "lookup"]
    assert chat.body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "tsc_1", "type": "function",
            "function": {"name": "tool_search", "arguments": '{"query": "orders"}'}}]},
        {"role": "tool", "tool_call_id": "tsc_1",
         "content": "Tools loaded, callable from now on: lookup, shop__pay."}]
