"""A run's context phase failing, on the production path (the deployment:
tests/context_deployment.py): the route's token counter failing (the fake's /tokenize
answers 500 on messages holding FAKE_COUNT_FAILURE and a compaction's summary) is the
upstream's failure, a 502; a bug of the run's own (a stored item it cannot handle, made so
by SQL) is its crash, a 500, also when it keeps its job from being prepared (its chat
request cannot be built: the run crashes before it streams, answered as any crash then).
Either way the tokens spent are counted once, with the exact errors, stored rows and
upstream requests."""
import time
from contextlib import contextmanager

import orjson
import psycopg
import pytest
import redis

from tests.context_deployment import (  # noqa: F401  (fixtures)
    api, is_unfinished_here, keys, stored_rows, windowed)
from tests.deployment_setup import provision
from tests.fake_upstream import COMPACTED_MARK, FAKE_COUNT_FAILURE
from tests.oracles import check_sse_stream
from tests.sse import parse_sse
from tests.test_e2e_durable import EventReader, wait_for, wait_status
from tests.websocket_client import error_turn, open_socket

CRASHED = "The server had an error while processing your request."
NOT_COUNTED = ("The input tokens could not be counted: upstream route 'echo': /tokenize "
               "answered HTTP 500.")
COMPACT_OVER_2 = [{"type": "compaction", "compact_threshold": 2}]


def usage(input_tokens: int, output_tokens: int) -> dict:
    return {"input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def sql(deployment, statement: str, *args) -> list:
    with psycopg.connect(deployment.env["DATABASE_URL"]) as database:
        cursor = database.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


def charged(deployment, response_id: str) -> list:
    return sql(deployment, "SELECT status, input_tokens, output_tokens FROM "
                           "accounting_responseusage WHERE response_id = %s", response_id)


def new_row(deployment, before: set) -> tuple:
    [row] = [row for row in stored_rows(deployment) if row[0] not in before]
    return row


def stored_and_charged(deployment) -> tuple:
    """The stored responses and the usage rows: what a run that crashed must not change."""
    return stored_rows(deployment), sql(deployment, "SELECT * FROM accounting_responseusage")


def serves_on(api) -> bool:
    """Whether the worker serves the next request after a run's crash."""
    return api.post("/responses", json={"model": "fake-echo",
                                        "input": "still here"}).json()["status"] == "completed"


def ended(api, response_id: str) -> dict:
    """The response once it has ended (failed, completed or cancelled)."""
    return wait_status(api, response_id, {"failed", "completed", "cancelled"})


@contextmanager
def under_trigger(deployment, name: str, create: str):
    """The trigger (and its function) `name`, made by `create` on `responses`, until the
    block ends."""
    with psycopg.connect(deployment.env["DATABASE_URL"], autocommit=True) as database:
        database.execute(create)
        try:
            yield
        finally:
            database.execute(f"DROP TRIGGER {name} ON responses; DROP FUNCTION {name}()")


def continued_under_trigger(deployment, api, upstream, name: str, create: str):
    """A fixture's body: a stored response's id to continue, with the trigger (and its
    function) `name` made by `create` on `responses` until the test ends."""
    first = api.post("/responses", json={"model": "fake-echo", "input": "one"}).json()
    with under_trigger(deployment, name, create):
        upstream.clear()
        yield first["id"]


def assert_turn_is_a_bare_500(deployment, keys, upstream, **turn) -> None:
    """A WebSocket turn of `turn` is answered the crash's error frame, the upstream not
    called."""
    with open_socket(deployment, keys[0]) as ws:
        frame = error_turn(ws, model="fake-echo", **turn)
    assert frame == {"type": "error", "status": 500, **BARE_500}
    assert upstream.requests() == []


def crashed_in_background(api, **body) -> tuple[dict, dict]:
    """A background response of `body`, as created and once it failed with the crash's
    error, no output and no usage."""
    created = api.post("/responses", json={"model": "fake-echo", "background": True,
                                           **body}).json()
    failed = ended(api, created["id"])
    assert (failed["status"], failed["error"], failed["output"], failed["usage"]) == (
        "failed", {"code": "server_error", "message": CRASHED}, [], None)
    return created, failed


def assert_failed_in_place(deployment, api, upstream, **body) -> None:
    """A background response of `body` fails in place (as the watchdog fails a run it gave
    up): the crash's error, its stream exactly created then failed, nothing charged, the
    upstream not called."""
    created, failed = crashed_in_background(api, **body)
    replay = parse_sse(api.get(f"/responses/{created['id']}", params={"stream": "true"}).content)
    assert [(e["type"], e["response"]["status"]) for e in replay.events] == [
        ("response.created", "in_progress"), ("response.failed", "failed")]
    assert replay.events[-1]["response"] == failed
    assert (charged(deployment, created["id"]), upstream.requests()) == ([], [])


def no_message_held(deployment) -> bool:
    """Whether the run queue and the workers' processing lists are empty (messages settled)."""
    client = redis.Redis.from_url(deployment.env["REDIS_URL"])
    return client.llen("gw:runs") == 0 and not any(
        client.lrange(key, 0, -1) for key in client.keys("gw:processing:*"))


# --- the counter fails: the upstream's failure ---------------------------------------------

def test_a_count_failed_after_its_compaction_is_a_502_to_a_client_waiting_for_it(
        windowed, api, clean_upstream):
    """The count after the compaction fails: the response is out (its compaction item), so
    it fails in its stream as for an upstream's failure mid-stream, and its client waiting
    for the whole answer gets a 502 naming it; its usage is the summary call's, once."""
    before = {row[0] for row in stored_rows(windowed)}
    reply = api.post("/responses", json={
        "model": "fake-echo", "input": f"{FAKE_COUNT_FAILURE} one two",
        "context_management": COMPACT_OVER_2})
    response_id, status, _, resource = new_row(windowed, before)
    assert (reply.status_code, reply.json()) == (502, {"error": {
        "message": f"Response {response_id} failed: {NOT_COUNTED}",
        "type": "server_error", "param": None, "code": "server_error"}})
    assert [r["path"] for r in clean_upstream.requests()] == [
        "/tokenize", "/v1/chat/completions", "/tokenize"]
    [compaction] = resource["output"]
    assert (status, resource["error"], compaction["type"]) == (
        "failed", {"code": "server_error", "message": NOT_COUNTED}, "compaction")
    assert not is_unfinished_here(compaction)  # its summary was written: it stands
    assert resource["usage"] == usage(12, 3)  # the summary's usage chunk
    assert charged(windowed, response_id) == [("failed", 12, 3)]


def test_a_count_failed_after_its_compaction_fails_the_stream(windowed, api, clean_upstream):
    reply = api.post("/responses", json={
        "model": "fake-echo", "input": f"{FAKE_COUNT_FAILURE} one two",
        "context_management": COMPACT_OVER_2, "stream": True})
    events, final = check_sse_stream(reply.content)
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.compaction.compacting", "response.output_item.done", "response.failed"]
    assert (final["status"], final["error"], final["usage"]) == (
        "failed", {"code": "server_error", "message": NOT_COUNTED}, usage(12, 3))
    assert final["output"] == [events[4]["item"]]
    assert api.get(f"/responses/{final['id']}").json() == final
    assert charged(windowed, final["id"]) == [("failed", 12, 3)]


@pytest.mark.parametrize("stream", [False, True])
def test_a_count_failed_before_anything_is_a_502_and_stores_nothing(
        windowed, api, clean_upstream, stream):
    """The run's first count fails: before any event and any upstream call answered, as an
    upstream refusing the run's call, the client (streaming or not) gets a 502; nothing is
    stored or charged."""
    before = stored_and_charged(windowed)
    reply = api.post("/responses", json={
        "model": "fake-echo", "input": f"{FAKE_COUNT_FAILURE} {COMPACTED_MARK}",
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "stream": stream})
    assert (reply.status_code, reply.json()) == (502, {"error": {
        "message": NOT_COUNTED, "type": "server_error", "param": None,
        "code": "upstream_error"}})
    assert [r["path"] for r in clean_upstream.requests()] == ["/tokenize"]
    assert stored_and_charged(windowed) == before


def test_a_background_response_whose_count_failed_is_stored_failed(
        windowed, api, clean_upstream):
    created = api.post("/responses", json={
        "model": "fake-echo", "input": f"{FAKE_COUNT_FAILURE} {COMPACTED_MARK}",
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "background": True}).json()
    failed = ended(api, created["id"])
    assert (failed["status"], failed["error"], failed["output"]) == (
        "failed", {"code": "server_error", "message": NOT_COUNTED}, [])
    assert [r["path"] for r in clean_upstream.requests()] == ["/tokenize"]


# --- the run's own bug: its crash ----------------------------------------------------------

def test_a_run_crashed_after_its_compaction_is_a_500_to_a_client_waiting_for_it(
        windowed, api, clean_upstream):
    """A stored message given a list for a `call_id` (by SQL; nothing the API stores): the
    chat request ignores it, the compaction's sealing hashes it (compaction_items.
    carried_items) and the run crashes once its summary call answered, with no event out
    to its client, who waits for the whole answer. That client gets a 500 in OpenAI's
    shape; the response is stored failed, its compaction unfinished, its usage the summary
    call's (its usage chunk), recorded once."""
    first = api.post("/responses", json={"model": "fake-echo", "input": "one two"}).json()
    sql(windowed, "UPDATE responses SET input_items = jsonb_set(input_items, '{0,call_id}',"
                  " '[]') WHERE id = %s", first["id"])
    clean_upstream.clear()
    before = {row[0] for row in stored_rows(windowed)}
    reply = api.post("/responses", json={"model": "fake-echo", "input": "three",
                                         "previous_response_id": first["id"],
                                         "context_management": COMPACT_OVER_2})
    response_id, status, _, resource = new_row(windowed, before)
    assert (reply.status_code, reply.json()) == (500, {"error": {
        "message": f"Response {response_id} failed: {CRASHED}",
        "type": "server_error", "param": None, "code": "server_error"}})
    assert reply.headers["content-type"] == "application/json"
    assert [r["path"] for r in clean_upstream.requests()] == [
        "/tokenize", "/v1/chat/completions"]
    [compaction] = resource["output"]
    assert (status, resource["error"], compaction["type"]) == (
        "failed", {"code": "server_error", "message": CRASHED}, "compaction")
    assert is_unfinished_here(compaction)
    assert resource["usage"] == usage(12, 3)  # the summary's usage chunk
    assert charged(windowed, response_id) == [("failed", 12, 3)]


def test_a_run_crashed_before_anything_is_a_bare_500_and_stores_nothing(
        windowed, api, clean_upstream):
    """A stored user message whose text is a list (by SQL) beside an image: the chat
    request carries it as a part, and the default route's counter (the estimate, asked by
    `context_management`) cannot render it: the run crashes before any event and any
    upstream call. The client waiting for the whole answer gets a 500 in OpenAI's shape;
    nothing is stored or charged."""
    first = api.post("/responses", json={"model": "fake-plain", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                     {"type": "input_image",
                                      "image_url": "https://img.example/cat.png"}]}]}).json()
    sql(windowed, "UPDATE responses SET input_items = jsonb_set(input_items,"
                  " '{0,content,0,text}', '[\"look\"]') WHERE id = %s", first["id"])
    clean_upstream.clear()
    before = stored_and_charged(windowed)
    reply = api.post("/responses", json={
        "model": "fake-plain", "input": "and now?", "previous_response_id": first["id"],
        "context_management": [{"type": "compaction", "compact_threshold": 1000}]})
    assert (reply.status_code, reply.json()) == (500, {"error": {
        "message": CRASHED, "type": "server_error", "param": None, "code": "server_error"}})
    assert clean_upstream.requests() == []
    assert stored_and_charged(windowed) == before


# --- the run's own bug before it streams: its job cannot be prepared ----------------------

LIST_TEXT = "TypeError: sequence item 0: expected str instance, list found"  # its traceback's
BARE_500 = {"error": {"message": CRASHED, "type": "server_error", "param": None,
                      "code": "server_error"}}


@pytest.fixture
def unbuildable(windowed, api, clean_upstream) -> str:
    """A stored response whose user message's text is a list (by SQL), with no image: the
    chat request of a response continuing it cannot be built (run_job.prepared)."""
    first = api.post("/responses", json={"model": "fake-echo", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "look"}]}]}).json()
    sql(windowed, "UPDATE responses SET input_items = jsonb_set(input_items,"
                  " '{0,content,0,text}', '[\"look\"]') WHERE id = %s", first["id"])
    clean_upstream.clear()
    return first["id"]


def crashes_logged(deployment) -> int:
    return sum(log.read_text().count(LIST_TEXT) for log in deployment.workdir.glob("worker-*"))


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_whose_chat_request_cannot_be_built_is_a_bare_500_at_once(
        windowed, api, clean_upstream, unbuildable, stream):
    """Its job is read and claimed, its chat request fails to build: the run crashes before
    any event and any upstream call, as any run crashing then does. Its client (streaming or
    not) gets a 500 in OpenAI's shape at once (not the watchdog's failure of an orphaned
    run seconds later); nothing is stored or charged; the crash is logged once, with its
    traceback; the worker goes on serving."""
    before = stored_and_charged(windowed)
    logged = crashes_logged(windowed)
    reply = api.post("/responses", json={"model": "fake-echo", "input": "and now?",
                                         "previous_response_id": unbuildable, "stream": stream})
    assert (reply.status_code, reply.json()) == (500, BARE_500)
    assert reply.headers["content-type"] == "application/json"
    assert clean_upstream.requests() == []
    assert stored_and_charged(windowed) == before
    assert crashes_logged(windowed) == logged + 1
    assert serves_on(api)


def test_a_websocket_turn_whose_chat_request_cannot_be_built_is_an_error_frame(
        windowed, keys, clean_upstream, unbuildable):
    assert_turn_is_a_bare_500(windowed, keys, clean_upstream, input="and now?",
                              previous_response_id=unbuildable)


def test_a_background_response_whose_chat_request_cannot_be_built_is_stored_failed(
        windowed, api, clean_upstream, unbuildable):
    created, failed = crashed_in_background(api, input="and now?",
                                            previous_response_id=unbuildable)
    assert charged(windowed, created["id"]) == [("failed", 0, 0)]
    assert clean_upstream.requests() == []


def test_a_carried_run_whose_chat_request_cannot_be_built_answers_its_client(windowed, api):
    """A run whose message carries its job (its client waits; it reads nothing stored) and
    whose input its chat request cannot be built from (put on the run queue by hand: the
    front door lets no such input through): its stream's answer is the bare 500, the row
    its claim wrote is removed, its message leaves the worker's processing list."""
    first = api.post("/responses", json={"model": "fake-echo", "input": "look"}).json()
    [(columns,)] = sql(windowed, "SELECT jsonb_build_object('tenant_id', tenant_id, 'model',"
                                 " model, 'store', store, 'background', background, 'request',"
                                 " request, 'resource', resource) FROM responses WHERE id = %s",
                       first["id"])
    response_id = "resp_" + "c" * 48
    job = {**columns, "previous_response_id": None, "conversation_id": None,
           "request": {**columns["request"], "context": {}},
           "resource": {**columns["resource"], "id": response_id, "status": "queued"},
           "input_items": [{"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": ["look"]}]}]}
    client = redis.Redis.from_url(windowed.env["REDIS_URL"])
    client.lpush("gw:runs", orjson.dumps({"id": response_id, "job": job}))
    [(entry_id, fields)] = wait_for(lambda: client.xrange(f"gw:events:{response_id}"),
                                    "the run's answer")
    assert (entry_id, orjson.loads(fields[b"x"])) == (
        b"0-1", {"status": 500, "body": BARE_500, "headers": {}})
    assert sql(windowed, "SELECT id FROM responses WHERE id = %s", response_id) == []
    wait_for(lambda: no_message_held(windowed), "the message acked")


# --- the run's safety net: raised outside its phases' own handling -------------------------

# A trigger corrupts a row as its run claims it (the claim's UPDATE returns what the run
# works from): a response whose input names a mark is read back with its `resource`'s
# `reasoning` a string (its streaming phase cannot be built: Streaming.__init__), or with
# its admission context missing its key (its settlement fails once its result is stored).
CORRUPT_AT_CLAIM = """
CREATE FUNCTION corrupt_at_claim() RETURNS trigger AS $$
BEGIN
  IF OLD.status = 'queued' AND NEW.status = 'in_progress' THEN
    IF NEW.input_items::text LIKE '%BAD-RESOURCE%' THEN
      NEW.resource := jsonb_set(NEW.resource, '{reasoning}', '"high"');
    ELSIF NEW.input_items::text LIKE '%BAD-CONTEXT%' THEN
      NEW.request := jsonb_set(NEW.request, '{context}', '{"limited": true}');
    END IF;
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER corrupt_at_claim BEFORE UPDATE ON responses
  FOR EACH ROW EXECUTE FUNCTION corrupt_at_claim();
"""


@pytest.fixture
def corrupt_at_claim(windowed, api, clean_upstream) -> str:
    """The trigger, for the test; the id of a stored response to continue (a continuation's
    run is sent with its id only, and claims the row the web wrote)."""
    yield from continued_under_trigger(windowed, api, clean_upstream, "corrupt_at_claim",
                                       CORRUPT_AT_CLAIM)


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_whose_streaming_phase_cannot_be_built_is_a_bare_500_at_once(
        windowed, api, clean_upstream, corrupt_at_claim, stream):
    """Claimed, its streaming phase fails to build (before, it raised out of the run: its
    row stayed in_progress while the worker lived, its client waited for 'No worker
    started'). As a crash before anything: the bare 500, the row removed, nothing charged,
    the upstream not called; the worker goes on serving."""
    before = stored_and_charged(windowed)
    reply = api.post("/responses", json={"model": "fake-echo", "input": "BAD-RESOURCE",
                                         "previous_response_id": corrupt_at_claim,
                                         "stream": stream})
    assert (reply.status_code, reply.json()) == (500, BARE_500)
    assert clean_upstream.requests() == []
    assert stored_and_charged(windowed) == before
    assert serves_on(api)


def test_a_websocket_turn_whose_streaming_phase_cannot_be_built_is_an_error_frame(
        windowed, keys, clean_upstream, corrupt_at_claim):
    assert_turn_is_a_bare_500(windowed, keys, clean_upstream, input="BAD-RESOURCE",
                              previous_response_id=corrupt_at_claim)


def test_a_background_run_whose_streaming_phase_cannot_be_built_is_failed_at_once(
        windowed, api, clean_upstream, corrupt_at_claim):
    """Background: failed in place, as the watchdog fails a dead worker's run (at once, not
    after its worker's heartbeat lapses: it never does), its stream ended."""
    assert_failed_in_place(windowed, api, clean_upstream, input="BAD-RESOURCE",
                           previous_response_id=corrupt_at_claim)


def test_a_run_whose_settlement_fails_after_it_is_stored_still_answers_its_client(
        windowed, api, clean_upstream, corrupt_at_claim):
    """Its result stored, its admission's settlement raises (its context lacks its key):
    before, its end was never published (its client waited until it gave up); now it is,
    as stored."""
    reply = api.post("/responses", json={"model": "fake-echo", "input": "BAD-CONTEXT",
                                         "previous_response_id": corrupt_at_claim})
    final = reply.json()
    assert (reply.status_code, final["status"], final["output"][0]["content"][0]["text"]) == (
        200, "completed", "user: one\nassistant: user: one\nuser: BAD-CONTEXT")
    assert api.get(f"/responses/{final['id']}").json() == final


def test_a_chat_run_that_raises_before_its_own_handling_answers_its_client(windowed, api):
    """A chat completion's run whose admission context is not an object (put on the run
    queue by hand: the front door builds it) raises before its own crash handling: its
    safety net answers its client the bare 500 (before, nothing: its client waited)."""
    [(tenant_id,)] = sql(windowed, "SELECT tenant_id FROM responses LIMIT 1")
    completion_id = "chatcmpl-" + "c" * 29
    messages = [{"role": "user", "content": "hi"}]
    job = {"id": completion_id, "tenant_id": tenant_id, "model": "fake-echo", "created": 1,
           "created_at": 1.0, "stream": True, "store": True, "include_usage": False,
           "metadata": {}, "messages": messages,
           "body": {"model": "fake-echo", "messages": messages, "stream": True},
           "client_function_names": [], "context": "not an object"}
    client = redis.Redis.from_url(windowed.env["REDIS_URL"])
    client.lpush("gw:runs", orjson.dumps({"id": completion_id, "chat": job}))
    [(entry_id, fields)] = wait_for(lambda: client.xrange(f"gw:events:{completion_id}"),
                                    "the run's answer")
    assert (entry_id, orjson.loads(fields[b"x"])) == (
        b"0-1", {"status": 500, "body": BARE_500, "headers": {}})
    wait_for(lambda: no_message_held(windowed), "the message acked")


# --- the run's crash before its claim ----------------------------------------------------

def test_a_run_whose_route_table_cannot_be_read_before_its_claim_is_a_bare_500_at_once(
        windowed, api, keys, clean_upstream):
    """A route row whose extra headers are not an object (by SQL; the admin and the command
    take an object only): the workers' read of the route table raises, which a run that
    carries its job does before its claim (before, it raised out of the run: its message
    stayed on its worker's processing list, its client waited for 'No worker started').
    As a crash before anything: its client (JSON, stream, WebSocket) gets the bare 500 at
    once, no row, nothing charged, the upstream not called, its message settled; the
    route fixed, the worker serves the next request."""
    before = stored_and_charged(windowed)
    sql(windowed, "UPDATE upstream_routes SET extra_headers = '\"x-oops\"' WHERE name = 'small'")
    try:
        time.sleep(5.5)  # the workers' route tables read before expire (5 s: the default)
        replies = [api.post("/responses", json={"model": "fake-echo", "input": "hello",
                                                "stream": stream}) for stream in (False, True)]
        with open_socket(windowed, keys[0]) as ws:
            frame = error_turn(ws, model="fake-echo", input="hello")
    finally:
        sql(windowed, "UPDATE upstream_routes SET extra_headers = '{}' WHERE name = 'small'")
    assert [(r.status_code, r.json()) for r in replies] == [(500, BARE_500)] * 2
    assert frame == {"type": "error", "status": 500, **BARE_500}
    assert clean_upstream.requests() == []
    assert stored_and_charged(windowed) == before
    wait_for(lambda: no_message_held(windowed), "the messages settled")
    assert serves_on(api)


# A row's job, as a message carries it (delivery.jobs.JOB_COLUMNS), and its tenant.
JOB_OF_ROW = """
SELECT tenant_id, jsonb_build_object('tenant_id', tenant_id, 'model', model, 'store', store,
  'background', background, 'previous_response_id', previous_response_id, 'request', request,
  'input_items', input_items, 'resource', resource, 'conversation_id', conversation_id)
FROM responses WHERE id = %s
"""

# A trigger refuses the claim of a response whose input names a mark: its statement raises
# (not an outage), whether it takes the row the web wrote or writes it as claimed.
REFUSE_CLAIM = """
CREATE FUNCTION refuse_claim() RETURNS trigger AS $$
BEGIN
  IF NEW.status = 'in_progress' AND NEW.input_items::text LIKE '%REFUSE-CLAIM%'
     AND (TG_OP = 'INSERT' OR OLD.status = 'queued') THEN
    RAISE EXCEPTION 'claim refused';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER refuse_claim BEFORE INSERT OR UPDATE ON responses
  FOR EACH ROW EXECUTE FUNCTION refuse_claim();
"""


@pytest.fixture
def refused_claims(windowed, api, clean_upstream) -> str:
    """The trigger, for the test; the id of a stored response to continue."""
    yield from continued_under_trigger(windowed, api, clean_upstream, "refuse_claim",
                                       REFUSE_CLAIM)


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_whose_claim_is_refused_is_a_bare_500_at_once(
        windowed, api, clean_upstream, refused_claims, stream):
    """Its claim raises: before, its message went back to the queue, and its claim was
    tried again every second while its client waited for 'No worker started'. As a crash
    before anything: the bare 500 at once, to a run whose row the web wrote (a
    continuation: its row removed, the upstream not called) and to one that carries its
    job (its claim sent beside its upstream call: no row); nothing charged, the messages
    settled, and the worker serves the next request."""
    before = stored_and_charged(windowed)
    continued = api.post("/responses", json={
        "model": "fake-echo", "input": "REFUSE-CLAIM", "stream": stream,
        "previous_response_id": refused_claims})
    assert (continued.status_code, continued.json(), clean_upstream.requests()) == (
        500, BARE_500, [])
    carried = api.post("/responses", json={"model": "fake-echo", "input": "REFUSE-CLAIM",
                                           "stream": stream})
    assert (carried.status_code, carried.json()) == (500, BARE_500)
    assert stored_and_charged(windowed) == before
    wait_for(lambda: no_message_held(windowed), "the messages settled")
    assert serves_on(api)


def test_a_background_run_whose_claim_is_refused_is_failed_at_once(
        windowed, api, clean_upstream, refused_claims):
    """Background (its row queued, before, for good): failed in place, as the watchdog
    fails a run it gave up, with the crash's error; its stream ended; nothing charged."""
    assert_failed_in_place(windowed, api, clean_upstream, input="REFUSE-CLAIM")
    wait_for(lambda: no_message_held(windowed), "the message settled")


def ended_lines(deployment, response_id: str) -> list[str]:
    """The worker's lines of the end of a run of `response_id` that crashed before its
    claim (run_crash's), in order."""
    lines = [orjson.loads(line) for log in sorted(deployment.workdir.glob("worker-*"))
             for line in log.read_text().splitlines() if line.startswith("{")]
    return [line["message"] for line in lines if line["logger"] == "responses_app.worker."
            "run_crash" and line["message"].startswith(f"run {response_id}")]


def test_a_resent_copy_that_crashes_before_its_claim_leaves_the_live_run_its_admission(
        windowed, upstream):
    """A run's message resent while its run lives (its worker taken for dead, or restarted
    with its processing list) whose copy's claim is refused (our bug) as the run streams.
    Before, the copy settled the response's admission as its own: the run's slot released
    while the run held it (its tenant, limited to one run at a time, was admitted a
    second), and the bare 500 published on the run's stream. Now the copy settles its
    message only: the run keeps its slot until it ends, its stream and usage its own."""
    [key] = provision(windowed, {"copy-one-run": {"keys": 1, "limits": {
        "concurrent_runs": 1}}})["copy-one-run"]
    held = f"bench-4-1-held1-copy{time.time_ns()}"  # held after `w0 `
    client = redis.Redis.from_url(windowed.env["REDIS_URL"])
    with windowed.client(key) as api, api.stream("POST", "/responses", json={
            "model": held, "input": "REFUSE-CLAIM", "stream": True}) as reply:
        reader = EventReader(reply)
        reader.read_until(lambda event: event["type"] == "response.output_text.delta")
        response_id = reader.events[0]["response"]["id"]
        [(tenant_id, columns)] = sql(windowed, JOB_OF_ROW, response_id)
        slots = f"gw:runs:t:{tenant_id}"
        slot = columns["request"]["context"]["slot"].encode()
        assert client.zrange(slots, 0, -1) == [slot]
        with under_trigger(windowed, "refuse_claim", REFUSE_CLAIM):
            client.lpush("gw:runs", orjson.dumps({"id": response_id, "job": columns,
                                                  "resent": True}))
            [ended] = wait_for(lambda: ended_lines(windowed, response_id), "the copy's end")
        assert client.zrange(slots, 0, -1) == [slot]
        assert ended == (f"run {response_id}: another run has its response; its copy "
                         "ends nothing")
        second = api.post("/responses", json={"model": "fake-echo", "input": "another"})
        assert (second.status_code, second.json()["error"]["message"]) == (
            429, "Too many concurrent runs for this organization: limit 1. Wait for one to "
                 "end and try again.")
        upstream.release(held)
        events = reader.read_to_end()
    assert [event["type"] for event in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", *["response.output_text.delta"] * 4,
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"]
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "w0 w1 w2 w3 "
    usage = events[-1]["response"]["usage"]
    assert charged(windowed, response_id) == [
        ("completed", usage["input_tokens"], usage["output_tokens"])]
    assert client.zrange(slots, 0, -1) == []
    wait_for(lambda: no_message_held(windowed), "the messages settled")


def test_a_run_message_whose_job_cannot_be_read_answers_its_client(windowed, api):
    """Messages whose job this worker cannot read (a field another version would add, put
    on the run queue by hand): a response's whose client waits (its row not written) and a
    chat completion's. Before, each raised as it was read, stayed on its worker's
    processing list and its client was answered nothing. As a crash before the claim: the
    bare 500 on its stream, no row, its message settled."""
    first = api.post("/responses", json={"model": "fake-echo", "input": "hi"}).json()
    [(tenant_id,)] = sql(windowed, "SELECT tenant_id FROM responses WHERE id = %s", first["id"])
    response_id, completion_id = "resp_" + "d" * 48, "chatcmpl-" + "d" * 29
    client = redis.Redis.from_url(windowed.env["REDIS_URL"])
    client.lpush("gw:runs", orjson.dumps({"id": response_id, "job": None, "awaited": {
        "tenant_id": tenant_id, "model": "fake-echo", "context": {}, "priority": 1}}))
    client.lpush("gw:runs", orjson.dumps({"id": completion_id, "chat": {
        "id": completion_id, "tenant_id": tenant_id, "model": "fake-echo", "priority": 1}}))
    answers = [wait_for(lambda: client.xrange(f"gw:events:{run_id}"), "the run's answer")
               for run_id in (response_id, completion_id)]
    assert [[(entry_id, orjson.loads(fields[b"x"])) for entry_id, fields in answer]
            for answer in answers] == [
        [(b"0-1", {"status": 500, "body": BARE_500, "headers": {}})]] * 2
    assert sql(windowed, "SELECT id FROM responses WHERE id = %s", response_id) == []
    wait_for(lambda: no_message_held(windowed), "the messages settled")
