"""Stored state on the production path: chains, store=false, delete, input items, tenants."""
import httpx
import psycopg

from tests.oracles import check_sse_stream


def echo_turn(api, text, previous=None, **extra):
    body = {"model": "fake-echo", "input": text, **extra}
    if previous:
        body["previous_response_id"] = previous
    response = api.post("/responses", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_chain_sends_history_in_order_and_stores_each_item_once(api, production, clean_upstream):
    first = echo_turn(api, "one", instructions="Only for turn one.")
    second = echo_turn(api, "two", previous=first["id"])
    third = echo_turn(api, "three", previous=second["id"], instructions="Turn three.")
    messages = clean_upstream.requests()[-1]["body"]["messages"]
    assert messages == [
        {"role": "system", "content": "Turn three."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": first["output"][0]["content"][0]["text"]},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": second["output"][0]["content"][0]["text"]},
        {"role": "user", "content": "three"},
    ]
    with psycopg.connect(production.env["DATABASE_URL"]) as conn:
        rows = conn.execute(
            "SELECT id, jsonb_array_length(input_items), jsonb_array_length(resource->'output')"
            " FROM responses WHERE id = ANY(%s) ORDER BY created_at",
            [[first["id"], second["id"], third["id"]]]).fetchall()
    assert rows == [(first["id"], 1, 1), (second["id"], 1, 1), (third["id"], 1, 1)]


def test_continuing_the_instant_completed_arrives_works(api, clean_upstream):
    for _ in range(5):
        with api.stream("POST", "/responses", json={"model": "fake-text", "input": "hi",
                                                    "stream": True}) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and '"type":"response.completed"' in line:
                    break
            response_id = line.split('"id":"', 1)[1].split('"', 1)[0]
            follow = api.post("/responses", json={"model": "fake-echo", "input": "next",
                                                  "previous_response_id": response_id})
        assert follow.status_code == 200, follow.text


def test_store_false_is_never_retrievable_nor_a_previous_response(api):
    with api.stream("POST", "/responses", json={"model": "fake-text", "input": "hi",
                                                "stream": True, "store": False}) as response:
        raw = response.read()
    events, final = check_sse_stream(raw)
    assert final["store"] is False
    assert api.get(f"/responses/{final['id']}").status_code == 404
    follow = api.post("/responses", json={"model": "fake-text", "input": "x",
                                          "previous_response_id": final["id"]})
    assert follow.status_code == 400
    assert follow.json()["error"]["code"] == "previous_response_not_found"
    assert follow.json()["error"]["param"] == "previous_response_id"


def test_delete_removes_the_response(api):
    created = echo_turn(api, "bye")
    deleted = api.delete(f"/responses/{created['id']}")
    assert deleted.json() == {"id": created["id"], "object": "response", "deleted": True}
    assert api.get(f"/responses/{created['id']}").status_code == 404
    assert api.delete(f"/responses/{created['id']}").status_code == 404


def test_input_items_page_with_after_limit_order(api):
    items = [{"type": "message", "role": "user", "content": f"m{i}", "id": f"msg_{i}"}
             for i in range(5)]
    created = api.post("/responses", json={"model": "fake-text", "input": items}).json()
    url = f"/responses/{created['id']}/input_items"
    page = api.get(url, params={"limit": 2}).json()
    assert [i["id"] for i in page["data"]] == ["msg_4", "msg_3"]
    assert (page["first_id"], page["last_id"], page["has_more"]) == ("msg_4", "msg_3", True)
    page = api.get(url, params={"limit": 2, "order": "asc", "after": "msg_1"}).json()
    assert [i["id"] for i in page["data"]] == ["msg_2", "msg_3"]
    assert page["has_more"] is True
    page = api.get(url, params={"order": "asc", "after": "msg_3"}).json()
    assert [i["id"] for i in page["data"]] == ["msg_4"]
    assert page["has_more"] is False
    assert page["data"][0] == {"id": "msg_4", "type": "message", "role": "user", "status": "completed",
                               "content": [{"type": "input_text", "text": "m4"}]}
    assert api.get(url, params={"limit": 101}).status_code == 400


def test_another_tenants_response_is_not_found(api, production, other_tenant_key):
    mine = echo_turn(api, "secret")
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {other_tenant_key}"}) as other:
        for method, path in [("GET", f"/responses/{mine['id']}"),
                             ("DELETE", f"/responses/{mine['id']}"),
                             ("GET", f"/responses/{mine['id']}/input_items")]:
            response = other.request(method, path)
            assert response.status_code == 404, (method, path)
            assert response.json()["error"]["code"] == "not_found"
        follow = other.post("/responses", json={"model": "fake-text", "input": "x",
                                                "previous_response_id": mine["id"]})
        assert follow.status_code == 400
        assert follow.json()["error"]["code"] == "previous_response_not_found"
    assert api.get(f"/responses/{mine['id']}").status_code == 200
