"""Upstream routing on the production path: routes set with `manage.py upstream_route`,
two more fake upstreams on 127.0.0.1 beside the default one, retries before the first
byte only, and a per-route concurrency limit."""
import concurrent.futures
import time

import psycopg
import pytest
from cryptography.fernet import Fernet

from tests.conftest import production_deployment
from tests.fake_upstream import FakeUpstream
from tests.oracles import check_sse_stream, validate_response
from tests.servers import SPARE_REDIS_DB, free_port
from tests.upstream_scenarios import HELLO, SCENARIOS
from tests.websocket_client import checked_turn, open_socket

ENCRYPTION_KEY = Fernet.generate_key().decode()
SECOND_KEY = "sk-second-upstream-secret"
TEXT = "".join(HELLO)
DEAD_REPLICA = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


@pytest.fixture(scope="module")
def second_upstream():
    with FakeUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def narrow_upstream():
    with FakeUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def routed(upstream, second_upstream, narrow_upstream, tmp_path_factory):
    """A deployment whose default upstream is the shared fake, with routes to two more."""
    with production_deployment(upstream, tmp_path_factory, "routing", SPARE_REDIS_DB,
                               ENCRYPTION_KEYS=ENCRYPTION_KEY, UPSTREAM_RETRY_MAX_WAIT="1",
                               SECOND_UPSTREAM_KEY=SECOND_KEY) as deployment:
        # before the first request: every process loads the route table on first use
        deployment.manage("upstream_route", "set", "second", "--model", "model-b",
                          "--base-url", second_upstream.base_url,
                          "--api-key-env", "SECOND_UPSTREAM_KEY", "--header", "X-Org=acme")
        deployment.manage("upstream_route", "set", "tools", "--model", "fake-tool*",
                          "--base-url", second_upstream.base_url,
                          "--api-key-env", "SECOND_UPSTREAM_KEY")
        deployment.manage("upstream_route", "set", "narrow", "--model", "bench-*",
                          "--base-url", narrow_upstream.base_url, "--max-concurrency", "2")
        deployment.manage("upstream_route", "set", "single", "--model", "fake-slow*",
                          "--base-url", narrow_upstream.base_url, "--max-concurrency", "1",
                          "--connect-timeout", "1")
        deployment.manage("upstream_route", "set", "pooled", "--model", "pool-*",
                          "--base-url", second_upstream.base_url,
                          "--replica-url", narrow_upstream.base_url,
                          "--replica-url", DEAD_REPLICA, "--max-concurrency", "10")
        deployment.manage("upstream_route", "set", "nowhere", "--model", "nowhere",
                          "--base-url", f"http://127.0.0.1:{free_port()}/v1",
                          "--connect-timeout", "1")
        yield deployment


@pytest.fixture(scope="module")
def routed_key(routed):
    return routed.new_api_key("dave")


@pytest.fixture
def client(routed, routed_key):
    with routed.client(routed_key) as api:
        yield api


def requests_for(server, model):
    return [r for r in server.requests() if r["body"]["model"] == model]


def test_an_exact_route_sends_the_model_to_its_upstream_with_its_key_and_headers(
        client, upstream, second_upstream):
    with client.stream("POST", "/responses", json={"model": "model-b", "input": "hi",
                                                   "stream": True}) as response:
        assert response.status_code == 200
        raw = response.read()
    _, final = check_sse_stream(raw)
    assert final["model"] == "model-b"
    assert final["output"][0]["content"][0]["text"] == TEXT
    [sent] = requests_for(second_upstream, "model-b")
    assert sent["headers"]["authorization"] == f"Bearer {SECOND_KEY}"
    assert sent["headers"]["x-org"] == "acme"
    assert requests_for(upstream, "model-b") == []


def test_a_chat_completion_takes_the_same_route_with_its_key_and_headers(
        client, upstream, second_upstream):
    second_upstream.clear()
    answer = client.post("/chat/completions", json={
        "model": "model-b", "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == TEXT
    [sent] = requests_for(second_upstream, "model-b")
    assert sent["headers"]["authorization"] == f"Bearer {SECOND_KEY}"
    assert sent["headers"]["x-org"] == "acme"
    assert sent["body"] == {"model": "model-b", "messages": [{"role": "user", "content": "hi"}],
                            "stream": True, "stream_options": {"include_usage": True}}
    unreachable = client.post("/chat/completions", json={
        "model": "nowhere", "messages": [{"role": "user", "content": "hi"}]})
    assert unreachable.status_code == 502
    assert unreachable.json()["error"]["code"] == "upstream_unreachable"


def test_a_prefix_route_takes_its_models_and_the_rest_go_to_the_default(
        client, upstream, second_upstream):
    upstream.clear()  # the session's default upstream has served earlier modules' requests
    second_upstream.clear()
    tools = client.post("/responses", json={"model": "fake-tools", "input": "weather?"})
    assert tools.status_code == 200
    validate_response(tools.json())
    assert [item["name"] for item in tools.json()["output"]] == ["get_weather", "get_time"]
    assert len(requests_for(second_upstream, "fake-tools")) == 1
    assert requests_for(upstream, "fake-tools") == []

    upstream.clear()
    text = client.post("/responses", json={"model": "fake-text", "input": "hi"})
    assert text.json()["output"][0]["content"][0]["text"] == TEXT
    assert requests_for(second_upstream, "fake-text") == []
    [sent] = requests_for(upstream, "fake-text")
    assert "authorization" not in sent["headers"]  # the default route has no key here


def test_models_lists_each_routed_model_once_by_the_route_that_serves_it(client):
    body = client.get("/models").json()
    tool_models = [name for name in SCENARIOS if name.startswith("fake-tool")]
    assert tool_models == ["fake-tools", "fake-tool-one-piece"]
    assert [(m["id"], m["owned_by"]) for m in body["data"]] == [
        ("model-b", "second"), ("nowhere", "nowhere"),  # exact routes, by name
        # then prefix routes, longest first (equal lengths by pattern): the models their
        # upstream reports under the prefix
        ("fake-slow", "fake"),
        *((name, "fake") for name in tool_models),
        *((name, "fake") for name in SCENARIOS
          if name not in tool_models and name != "fake-slow"),  # the default's
    ]


def test_an_upstream_failing_before_its_first_byte_is_retried(client, upstream):
    # 503, 503, then a stream: two retries (UPSTREAM_MAX_RETRIES defaults to 2)
    with client.stream("POST", "/responses", json={"model": "fake-flaky-503x2-a", "input": "hi",
                                                   "stream": True}) as response:
        assert response.status_code == 200
        raw = response.read()
    _, final = check_sse_stream(raw)
    assert final["output"][0]["content"][0]["text"] == TEXT
    assert len(requests_for(upstream, "fake-flaky-503x2-a")) == 3

    # a 429 whose Retry-After (0 s) is within UPSTREAM_RETRY_MAX_WAIT is waited out
    response = client.post("/responses", json={"model": "fake-flaky-429x1-b", "input": "hi"})
    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    assert len(requests_for(upstream, "fake-flaky-429x1-b")) == 2


def test_retries_give_up_with_the_last_upstream_error(client, upstream):
    response = client.post("/responses", json={"model": "fake-flaky-502x5-c", "input": "hi"})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_error"
    assert len(requests_for(upstream, "fake-flaky-502x5-c")) == 3


@pytest.mark.parametrize("model, status, code", [
    ("fake-500", 502, "upstream_error"),           # not a "try later" status
    ("fake-400", 400, "upstream_invalid_request"),
    ("fake-429", 429, "rate_limit_exceeded"),      # Retry-After 7 s is over the 1 s cap
])
def test_failures_that_retrying_cannot_fix_are_answered_at_once(client, upstream, model,
                                                                status, code):
    upstream.clear()
    response = client.post("/responses", json={"model": model, "input": "hi"})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert len(requests_for(upstream, model)) == 1
    if status == 429:
        assert response.headers["retry-after"] == "7"


def test_a_stream_that_fails_after_output_began_is_never_retried(client, upstream):
    upstream.clear()
    with client.stream("POST", "/responses", json={"model": "fake-drop", "input": "hi",
                                                   "stream": True}) as response:
        raw = response.read()
    _, final = check_sse_stream(raw)
    assert final["status"] == "failed"
    assert len(requests_for(upstream, "fake-drop")) == 1


def test_an_unreachable_route_is_a_502_not_a_fallback(client, upstream):
    upstream.clear()
    response = client.post("/responses", json={"model": "nowhere", "input": "hi"})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_unreachable"
    assert requests_for(upstream, "nowhere") == []


def test_a_route_holds_at_most_its_concurrency_limit_of_open_streams(client, narrow_upstream):
    def create(i):
        return client.post("/responses", json={"model": "bench-20-40", "input": f"run {i}"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        replies = list(pool.map(create, range(6)))
    assert [r.status_code for r in replies] == [200] * 6
    assert all(r.json()["status"] == "completed" for r in replies)
    stats = narrow_upstream.stats()
    assert stats["requests"] == 6
    assert stats["max_in_flight"] == 2


def test_a_run_that_finds_no_free_slot_in_time_gets_a_503(client, narrow_upstream):
    def hold_the_only_slot():  # the upstream waits 3 s before its first byte
        return client.post("/responses", json={"model": "fake-slow-3000", "input": "first"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(hold_the_only_slot)
        deadline = time.monotonic() + 10
        while narrow_upstream.stats()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert narrow_upstream.stats()["in_flight"] == 1
        second = client.post("/responses", json={"model": "fake-slow-10", "input": "second"})
        assert second.status_code == 503
        assert second.headers["retry-after"] == "1"
        assert second.json()["error"] == {
            "message": "The upstream 'single' is at its limit of 1 concurrent requests.",
            "type": "server_error", "param": None, "code": "upstream_busy"}
        assert first.result().json()["status"] == "completed"


def test_a_run_cancelled_while_it_waits_for_a_slot_used_no_tokens(client, narrow_upstream):
    """Cancelled before its upstream call was made (waiting for the route's only free slots,
    after its MCP listing): nothing was spent, so its usage is null and nothing is charged
    (a cut call is counted only once the upstream answered it)."""
    from tests.invariants import check_cancelled_stream
    from tests.mcp_server import McpTestServer
    from tests.test_e2e_durable import cancelled_mid_stream

    held = f"bench-4-1-held1-slots{time.time_ns()}"

    demo = McpTestServer("demo").start()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        holders = _holding_both_slots(pool, client, narrow_upstream, held)
        body = {"model": held, "background": True, "stream": True, "input": "third",
                "tools": [{"type": "mcp", "server_label": "demo", "server_url": demo.url,
                           "require_approval": "never"}]}
        response_id, cancelled, events = cancelled_mid_stream(
            client, body, lambda e: e["type"] == "response.output_item.done")
        narrow_upstream.release(held)
        assert [h.result().json()["status"] for h in holders] == ["completed"] * 2
    demo.stop()
    assert [item["type"] for item in check_cancelled_stream(events)] == ["mcp_list_tools"]
    assert cancelled["status"] == "cancelled"
    assert cancelled["usage"] is None
    assert client.get(f"/responses/{response_id}").json()["usage"] is None
    assert sorted(r["body"]["messages"][-1]["content"]
                  for r in requests_for(narrow_upstream, held)) == ["hold 0", "hold 1"]


def test_route_keys_are_stored_encrypted(routed):
    with psycopg.connect(routed.env["DATABASE_URL"]) as conn:
        rows = dict(conn.execute(
            "SELECT name, api_key_encrypted FROM upstream_routes ORDER BY name").fetchall())
    assert rows["narrow"] == rows["single"] == ""
    assert SECOND_KEY not in rows["second"]
    assert Fernet(ENCRYPTION_KEY.encode()).decrypt(rows["second"].encode()).decode() == SECOND_KEY


def test_a_chain_stays_on_one_replica_of_its_route_and_each_response_records_it(
        client, routed, second_upstream, narrow_upstream):
    """A route of three replicas, one of them down: a four-turn chain is answered by one
    live replica, every turn (the dead one at most failed over once); each stored response
    names that replica."""
    ids, previous = [], None
    for turn in range(4):
        body = {"model": "pool-chain", "input": f"turn {turn}"}
        if previous:
            body["previous_response_id"] = previous
        response = client.post("/responses", json=body)
        assert response.status_code == 200
        assert response.json()["output"][0]["content"][0]["text"] == TEXT
        previous = response.json()["id"]
        ids.append(previous)
    served = {server.base_url: len(requests_for(server, "pool-chain"))
              for server in (second_upstream, narrow_upstream)}
    assert sorted(served.values()) == [0, 4]
    home = max(served, key=served.get)
    with psycopg.connect(routed.env["DATABASE_URL"]) as conn:
        recorded = dict(conn.execute("SELECT id, upstream_replica FROM responses "
                                     "WHERE id = ANY(%s)", [ids]).fetchall())
    assert recorded == {response_id: home for response_id in ids}


def test_a_websocket_chain_of_unstored_turns_stays_on_one_replica(
        routed, routed_key, second_upstream, narrow_upstream):
    previous = None
    with open_socket(routed, routed_key) as ws:
        for turn in range(3):
            frame = {"model": "pool-socket", "store": False, "input": f"turn {turn}"}
            if previous:
                frame["previous_response_id"] = previous
            _, final = checked_turn(ws, **frame)
            assert final["output"][0]["content"][0]["text"] == TEXT
            previous = final["id"]
    assert sorted(len(requests_for(server, "pool-socket"))
                  for server in (second_upstream, narrow_upstream)) == [0, 3]


def test_a_chain_of_item_references_stays_on_one_replica(client, second_upstream,
                                                         narrow_upstream):
    """The Vercel AI SDK's chain: no previous_response_id, the earlier answers sent as
    `item_reference`s: each turn goes to the replica of the answer it references last."""
    history = []
    for turn in range(3):
        response = client.post("/responses", json={"model": "pool-refs", "input": history + [
            {"role": "user", "content": f"turn {turn}"}]})
        assert response.status_code == 200
        output = response.json()["output"]
        assert output[0]["content"][0]["text"] == TEXT
        history += [{"role": "user", "content": f"turn {turn}"},
                    {"type": "item_reference", "id": output[-1]["id"]}]
    assert sorted(len(requests_for(server, "pool-refs"))
                  for server in (second_upstream, narrow_upstream)) == [0, 3]


def test_a_summary_waits_for_the_routes_slot_and_cancelled_there_used_no_tokens(
        client, narrow_upstream):
    """A compaction's summary is an upstream call of the route like any turn: with the
    route's two slots held, it waits (nothing reaches the upstream); cancelled there, the
    response ends cancelled with no usage (a call counts once the upstream answered it)."""
    from tests.test_e2e_durable import cancelled_mid_stream

    held = f"bench-4-1-held1-summaryslots{time.time_ns()}"

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        holders = _holding_both_slots(pool, client, narrow_upstream, held)
        body = {"model": held, "background": True, "stream": True,
                "input": [{"role": "user", "content": "third"}, {"type": "compaction_trigger"}]}
        response_id, cancelled, events = cancelled_mid_stream(
            client, body, lambda e: e["type"] == "response.compaction.compacting")
        assert narrow_upstream.stats()["in_flight"] == 2  # the holders only
        narrow_upstream.release(held)
        assert [h.result().json()["status"] for h in holders] == ["completed"] * 2
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done"]  # closed, unfinished
    assert cancelled["output"] == [events[-1]["item"]]
    assert cancelled["status"] == "cancelled"
    assert cancelled["usage"] is None
    assert client.get(f"/responses/{response_id}").json()["usage"] is None
    assert sorted(r["body"]["messages"][-1]["content"]
                  for r in requests_for(narrow_upstream, held)) == ["hold 0", "hold 1"]


def _holding_both_slots(pool, client, narrow_upstream, held: str) -> list:
    """Two responses of model `held` (slow: `bench-…-held…`), posted on `pool`, holding the
    narrow route's two slots: their futures, once the upstream has both in flight."""
    holders = [pool.submit(client.post, "/responses",
                           json={"model": held, "input": f"hold {i}"}) for i in range(2)]
    deadline = time.monotonic() + 10
    while narrow_upstream.stats()["in_flight"] < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert narrow_upstream.stats()["in_flight"] == 2
    return holders
