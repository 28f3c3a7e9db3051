"""The Conversations API on the production path (Daphne, Celery, Postgres, Redis): multi-turn
responses with `conversation`, item paging and CRUD, tenant isolation, validation, deletion.
Conversation objects and item lists are judged by the openai SDK's models."""
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
import redis
from openai.types.conversations import (
    Conversation,
    ConversationDeletedResource,
    ConversationItemList,
)
from pydantic import TypeAdapter

from tests.oracles import check_sse_stream, validate_response
from tests.servers import E2E_REDIS_DB, REDIS_BASE_URL
from tests.upstream_scenarios import SCENARIOS, text_of

ITEM_LIST = TypeAdapter(ConversationItemList)


def user(text, item_id=None):
    item = {"type": "message", "role": "user", "content": text}
    return {**item, "id": item_id} if item_id else item


def stored_user(text, item_id):
    """A user message as the gateway stores and lists it."""
    return {"id": item_id, "type": "message", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": text}]}


def new_conversation(api, **body):
    response = api.post("/conversations", json=body)
    assert response.status_code == 200, response.text
    conversation = response.json()
    Conversation.model_validate(conversation)
    return conversation


def all_items(api, conversation_id):
    page = api.get(f"/conversations/{conversation_id}/items",
                   params={"order": "asc", "limit": 100}).json()
    if page["data"]:
        ITEM_LIST.validate_python(page)
    else:  # the SDK types first_id/last_id as strings; an empty page has none (null)
        assert page == {"object": "list", "data": [], "first_id": None, "last_id": None,
                        "has_more": False}
    assert page["has_more"] is False
    return page["data"]


def turn(api, conversation, text, **extra):
    response = api.post("/responses", json={"model": "fake-echo", "input": text,
                                            "conversation": conversation, **extra})
    assert response.status_code == 200, response.text
    body = response.json()
    validate_response(body)
    return body


def input_item_ids(api, response_id):
    return [item["id"] for item in
            api.get(f"/responses/{response_id}/input_items", params={"order": "asc"}).json()["data"]]


def assert_error(response, status, code, param=None):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, param)
    assert error["message"]


def test_a_multi_turn_conversation_sends_its_items_in_order_and_appends_each_turn(
        api, clean_upstream):
    conversation = new_conversation(api, items=[user("I am Ada.", "msg_intro")],
                                    metadata={"topic": "names"})
    assert conversation["metadata"] == {"topic": "names"}
    conversation_id = conversation["id"]
    assert conversation_id.startswith("conv_")

    first = turn(api, conversation_id, "Who am I?")
    assert first["conversation"] == {"id": conversation_id}
    assert first["output"][0]["content"][0]["text"] == "user: I am Ada.\nuser: Who am I?"

    with api.stream("POST", "/responses", json={
            "model": "fake-echo", "input": "Again?", "stream": True,
            "conversation": {"id": conversation_id}}) as response:
        raw = response.read()
    _, second = check_sse_stream(raw)
    assert second["conversation"] == {"id": conversation_id}
    assert second["output"][0]["content"][0]["text"] == (
        "user: I am Ada.\nuser: Who am I?\nassistant: user: I am Ada.\nuser: Who am I?\n"
        "user: Again?")
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "I am Ada."},
        {"role": "user", "content": "Who am I?"},
        {"role": "assistant", "content": "user: I am Ada.\nuser: Who am I?"},
        {"role": "user", "content": "Again?"},
    ]

    items = all_items(api, conversation_id)
    [first_input] = input_item_ids(api, first["id"])
    [second_input] = input_item_ids(api, second["id"])
    assert items == [
        stored_user("I am Ada.", "msg_intro"),
        stored_user("Who am I?", first_input),
        first["output"][0],
        stored_user("Again?", second_input),
        second["output"][0],
    ]
    assert api.get(f"/responses/{first['id']}").json() == first


def test_items_page_in_both_directions(api, openai_client):
    ids = [f"msg_{i}" for i in range(5)]
    conversation_id = new_conversation(
        api, items=[user(f"m{i}", item_id) for i, item_id in enumerate(ids)])["id"]
    url = f"/conversations/{conversation_id}/items"

    def page(**params):
        body = api.get(url, params=params).json()
        ITEM_LIST.validate_python(body)
        return [item["id"] for item in body["data"]], body["first_id"], body["last_id"], \
            body["has_more"]

    assert page(limit=2) == (["msg_4", "msg_3"], "msg_4", "msg_3", True)
    assert page(limit=2, after="msg_3") == (["msg_2", "msg_1"], "msg_2", "msg_1", True)
    assert page(limit=2, after="msg_1") == (["msg_0"], "msg_0", "msg_0", False)
    assert page(limit=2, order="asc") == (["msg_0", "msg_1"], "msg_0", "msg_1", True)
    assert page(limit=2, order="asc", after="msg_1") == (["msg_2", "msg_3"], "msg_2", "msg_3",
                                                         True)
    assert page(order="asc", after="msg_3") == (["msg_4"], "msg_4", "msg_4", False)
    assert page() == (ids[::-1], "msg_4", "msg_0", False)
    # the SDK's auto-pagination follows `last_id` until `has_more` is false
    listed = openai_client.conversations.items.list(conversation_id, limit=2, order="asc")
    assert [item.id for item in listed] == ids


def test_a_conversation_needs_no_body(api):
    response = api.post("/conversations")
    assert response.status_code == 200, response.text
    assert response.json()["metadata"] == {}
    Conversation.model_validate(response.json())


def test_item_crud(api):
    conversation = new_conversation(api)
    url = f"/conversations/{conversation['id']}/items"
    assert all_items(api, conversation["id"]) == []

    added = api.post(url, json={"items": [user("one", "msg_a"), {"role": "assistant",
                                                                  "content": "two", "id": "msg_b"}]})
    assert added.status_code == 200, added.text
    ITEM_LIST.validate_python(added.json())
    assert added.json() == {
        "object": "list", "first_id": "msg_a", "last_id": "msg_b", "has_more": False,
        "data": [stored_user("one", "msg_a"),
                 {"id": "msg_b", "type": "message", "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": "two", "annotations": [],
                               "logprobs": []}]}]}
    assert api.get(f"{url}/msg_a").json() == stored_user("one", "msg_a")

    deleted = api.delete(f"{url}/msg_a")
    assert deleted.status_code == 200
    assert deleted.json() == conversation
    assert_error(api.get(f"{url}/msg_a"), 404, "not_found")
    assert_error(api.delete(f"{url}/msg_a"), 404, "not_found")
    assert [item["id"] for item in all_items(api, conversation["id"])] == ["msg_b"]

    # an id the conversation holds is refused; a deleted one can be reused
    assert_error(api.post(url, json={"items": [user("again", "msg_b")]}), 400, "invalid_value",
                 "items[0].id")
    assert api.post(url, json={"items": [user("back", "msg_a")]}).status_code == 200
    assert [item["id"] for item in all_items(api, conversation["id"])] == ["msg_b", "msg_a"]


def test_conversation_update_and_delete_removes_its_items(api, production):
    conversation = new_conversation(api, items=[user("x", "msg_x")], metadata={"a": "1"})
    url = f"/conversations/{conversation['id']}"
    updated = api.post(url, json={"metadata": {"b": "2"}})
    assert updated.json() == {**conversation, "metadata": {"b": "2"}}
    assert api.get(url).json() == updated.json()

    deleted = api.delete(url)
    ConversationDeletedResource.model_validate(deleted.json())
    assert deleted.json() == {"id": conversation["id"], "object": "conversation.deleted",
                              "deleted": True}
    for method, path in [("GET", url), ("DELETE", url), ("GET", f"{url}/items"),
                         ("GET", f"{url}/items/msg_x")]:
        assert_error(api.request(method, path), 404, "not_found")
    with psycopg.connect(production.env["DATABASE_URL"]) as conn:
        left = conn.execute("SELECT count(*) FROM conversation_items WHERE conversation_id = %s",
                            [conversation["id"]]).fetchone()
    assert left == (0,)


def test_another_tenants_conversation_is_not_found(api, production, other_tenant_key):
    conversation_id = new_conversation(api, items=[user("secret", "msg_s")])["id"]
    url = f"/conversations/{conversation_id}"
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {other_tenant_key}"}) as other:
        for method, path, body in [
                ("GET", url, None), ("POST", url, {"metadata": {}}), ("DELETE", url, None),
                ("GET", f"{url}/items", None), ("POST", f"{url}/items", {"items": [user("x")]}),
                ("GET", f"{url}/items/msg_s", None), ("DELETE", f"{url}/items/msg_s", None)]:
            assert_error(other.request(method, path, json=body), 404, "not_found")
        assert_error(other.post("/responses", json={"model": "fake-echo", "input": "x",
                                                    "conversation": conversation_id}),
                     404, "not_found", "conversation")
    assert [item["id"] for item in all_items(api, conversation_id)] == ["msg_s"]


@pytest.mark.parametrize("method, path, body, status, code, param", [
    ("POST", "/conversations", [], 400, None, None),
    ("POST", "/conversations", {"metadata": {"k": 1}}, 400, "invalid_value", "metadata"),
    ("POST", "/conversations", {"items": "hi"}, 400, "invalid_type", "items"),
    ("POST", "/conversations", {"items": [user(str(i)) for i in range(21)]}, 400,
     "invalid_value", "items"),
    ("POST", "/conversations", {"items": [{"role": "robot", "content": "x"}]}, 400,
     "invalid_value", "items[0].role"),
    ("POST", "/conversations", {"items": [{"type": "item_reference", "id": "msg_1"}]}, 400,
     "invalid_value", "items[0].type"),
    ("POST", "/conversations", {"items": [user("a", "msg_1"), user("b", "msg_1")]}, 400,
     "invalid_value", "items[1].id"),
    ("POST", "/conversations", {"items": [user("a", "msg_" + "x" * 200)]}, 400,
     "invalid_value", "items[0].id"),
    ("POST", "/conversations/{id}", {}, 400, "missing_required_parameter", "metadata"),
    ("POST", "/conversations/{id}/items", {}, 400, "missing_required_parameter", "items"),
    ("POST", "/conversations/{id}/items", {"items": []}, 400, "invalid_value", "items"),
    ("GET", "/conversations/{id}/items?limit=0", None, 400, "invalid_value", "limit"),
    ("GET", "/conversations/{id}/items?order=sideways", None, 400, "invalid_value", "order"),
    ("GET", "/conversations/{id}/items?after=msg_nope", None, 400, "invalid_value", "after"),
    ("GET", "/conversations/conv_nope", None, 404, "not_found", None),
    ("POST", "/responses", {"model": "fake-echo", "input": "x", "conversation": "conv_nope"},
     404, "not_found", "conversation"),
    ("POST", "/responses", {"model": "fake-echo", "input": "x", "conversation": "{id}",
                            "previous_response_id": "resp_1"},
     400, "mutually_exclusive_parameters", None),
    ("POST", "/responses", {"model": "fake-echo", "input": [user("x", "msg_held")],
                            "conversation": "{id}"}, 400, "invalid_value", "input[0].id"),
    ("POST", "/responses", {"model": "fake-echo", "conversation": "{id}",
                            "input": [{"type": "item_reference", "id": "msg_nope"}]},
     400, "item_not_found", "input[0].id"),
])
def test_bad_requests_get_openai_shaped_errors(api, method, path, body, status, code, param):
    conversation_id = new_conversation(api, items=[user("held", "msg_held")])["id"]
    if isinstance(body, dict) and body.get("conversation") == "{id}":
        body = {**body, "conversation": conversation_id}
    response = api.request(method, path.replace("{id}", conversation_id), json=body)
    assert_error(response, status, code, param)
    assert [item["id"] for item in all_items(api, conversation_id)] == ["msg_held"]


def test_store_false_adds_the_turn_but_the_response_is_not_retrievable(api):
    conversation_id = new_conversation(api)["id"]
    response = turn(api, conversation_id, "private", store=False)
    assert api.get(f"/responses/{response['id']}").status_code == 404
    assert [item["id"] for item in all_items(api, conversation_id)][1:] == [
        response["output"][0]["id"]]


def test_a_failed_turn_adds_nothing(api):
    conversation_id = new_conversation(api, items=[user("before", "msg_before")])["id"]
    with api.stream("POST", "/responses", json={"model": "fake-drop", "input": "x", "stream": True,
                                                "conversation": conversation_id}) as response:
        raw = response.read()
    _, final = check_sse_stream(raw)
    assert final["status"] == "failed"
    assert [item["id"] for item in all_items(api, conversation_id)] == ["msg_before"]


def test_an_incomplete_turn_is_added(api):
    conversation_id = new_conversation(api)["id"]
    response = api.post("/responses", json={"model": "fake-length", "input": "long?",
                                            "conversation": conversation_id}).json()
    assert response["status"] == "incomplete"
    items = all_items(api, conversation_id)
    assert items[1:] == response["output"]
    assert response["output"][0]["status"] == "incomplete"


def test_concurrent_turns_append_whole_turns(api):
    conversation_id = new_conversation(api)["id"]
    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(lambda i: turn(api, conversation_id, f"turn {i}"), range(6)))
    by_input = {input_item_ids(api, r["id"])[0]: r["output"][0]["id"] for r in responses}
    items = [item["id"] for item in all_items(api, conversation_id)]
    assert len(items) == 12
    # each turn's input is followed at once by that turn's output
    assert {items[i]: items[i + 1] for i in range(0, 12, 2)} == by_input


def test_deleting_a_response_removes_its_event_stream(api):
    with api.stream("POST", "/responses", json={"model": "fake-text", "input": "hi",
                                                "stream": True}) as response:
        raw = response.read()
    _, final = check_sse_stream(raw)
    events = redis.Redis.from_url(f"{REDIS_BASE_URL}/{E2E_REDIS_DB}")
    key = f"gw:events:{final['id']}"
    assert events.exists(key) == 1
    assert api.delete(f"/responses/{final['id']}").status_code == 200
    assert events.exists(key) == 0


def test_sdk_conversations(openai_client, clean_upstream):
    conversation = openai_client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "I like tea."}],
        metadata={"user": "u1"})
    assert openai_client.conversations.retrieve(conversation.id) == conversation
    updated = openai_client.conversations.update(conversation.id, metadata={"user": "u2"})
    assert updated.metadata == {"user": "u2"}

    answer = openai_client.responses.create(model="fake-echo", input="What do I like?",
                                            conversation=conversation.id)
    assert answer.conversation.id == conversation.id
    assert answer.output_text == "user: I like tea.\nuser: What do I like?"

    added = openai_client.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "Noted."}])
    [note] = added.data
    assert openai_client.conversations.items.retrieve(note.id, conversation_id=conversation.id
                                                      ).content[0].text == "Noted."
    texts = [item.content[0].text for item in
             openai_client.conversations.items.list(conversation.id, order="asc")]
    assert texts == ["I like tea.", "What do I like?", answer.output_text, "Noted."]
    assert openai_client.conversations.items.delete(note.id, conversation_id=conversation.id
                                                    ).id == conversation.id
    with openai_client.responses.stream(model="fake-text", input="more",
                                        conversation=conversation.id) as stream:
        final = stream.get_final_response()
    assert final.output_text == text_of(SCENARIOS["fake-text"])
    deleted = openai_client.conversations.delete(conversation.id)
    assert (deleted.id, deleted.deleted) == (conversation.id, True)
