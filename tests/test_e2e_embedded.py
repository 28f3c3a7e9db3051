"""The embedded default, as `make run` serves it: no DATABASE_URL, no REDIS_URL — the embedded
PostgreSQL (its data directory in a temporary directory instead of var/), an in-process worker
and an in-process bus, through the same code path (one Daphne process, nothing else)."""
import shutil
import tempfile
from pathlib import Path

import httpx
import orjson
import pytest

from tests.oracles import check_sse_stream
from tests.servers import Deployment, assert_embedded_postgres_stopped
from tests.upstream_scenarios import SCENARIOS, text_of


@pytest.fixture(scope="module")
def embedded_deployment(upstream, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("embedded")
    # Not under pytest's basetemp: as root the server runs as the user `pgserver`, who must
    # reach the data directory, and a pytest session starting beside this one (another
    # checkout's) makes /tmp/pytest-of-root private again.
    pgdata = Path(tempfile.mkdtemp(prefix="gateway-embedded-")) / "pgdata"
    deployment = Deployment(workdir, {
        "EMBEDDED_PGDATA": str(pgdata),
        "UPSTREAM_BASE_URL": upstream.base_url,
        "EMBEDDED_SIGN_INTERVAL_SECONDS": "1",  # the sign backfill's timer (60 s by default)
    }, worker=False)
    deployment.manage("migrate", "-v0")
    deployment.api_key = deployment.new_api_key("solo")
    deployment.start()
    yield deployment
    deployment.stop()
    # the last process using the embedded server stopped it on its way out
    assert_embedded_postgres_stopped(pgdata)
    shutil.rmtree(pgdata.parent)


@pytest.fixture(scope="module")
def embedded(embedded_deployment):
    with embedded_deployment.client(embedded_deployment.api_key) as client:
        yield client


def test_embedded_streams_stores_and_chains(embedded, clean_upstream):
    with embedded.stream("POST", "/responses", json={"model": "fake-tools", "input": "weather?",
                                                     "stream": True}) as response:
        raw = response.read()
    events, final = check_sse_stream(raw)
    assert [i["call_id"] for i in final["output"]] == ["call_abc", "call_def"]
    assert embedded.get(f"/responses/{final['id']}").json() == final
    answer = embedded.post("/responses", json={
        "model": "fake-echo", "previous_response_id": final["id"],
        "input": [{"type": "function_call_output", "call_id": "call_abc", "output": "sunny"},
                  {"type": "function_call_output", "call_id": "call_def", "output": "noon"}]})
    assert answer.status_code == 200
    assert answer.json()["output"][0]["content"][0]["text"] == (
        "user: weather?\n"
        'assistant.tool_calls: get_weather({"city": "Paris"})\n'
        'assistant.tool_calls: get_time({"tz": "Europe/Paris"})\n'
        "tool[call_abc]: sunny\ntool[call_def]: noon")


def test_embedded_maps_upstream_errors(embedded):
    response = embedded.post("/responses", json={"model": "fake-429", "input": "hi", "stream": True})
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    with embedded.stream("POST", "/responses", json={"model": "fake-drop", "input": "hi",
                                                     "stream": True}) as response:
        raw = response.read()
    events, final = check_sse_stream(raw)
    assert final["status"] == "failed"
    assert embedded.get(f"/responses/{final['id']}").json()["status"] == "failed"


def test_embedded_non_stream_text(embedded):
    body = embedded.post("/responses", json={"model": "fake-text", "input": "hi"}).json()
    assert body["output"][0]["content"][0]["text"] == text_of(SCENARIOS["fake-text"])


def test_embedded_chat_completions_stream_and_store(embedded):
    """The chat front on the in-process worker and bus: streamed chunks, a stored completion."""
    with embedded.stream("POST", "/chat/completions", json={
            "model": "fake-text", "stream": True, "store": True,
            "messages": [{"role": "user", "content": "hi"}]}) as response:
        raw = response.read()
    blocks = [block for block in raw.split(b"\n\n") if block]
    assert blocks[-1] == b"data: [DONE]"
    chunks = [orjson.loads(block[6:]) for block in blocks[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == text_of(
        SCENARIOS["fake-text"])
    stored = embedded.get(f"/chat/completions/{chunks[0]['id']}").json()
    assert stored["choices"][0]["message"]["content"] == text_of(SCENARIOS["fake-text"])


def test_embedded_conversation_turns_and_deletion(embedded):
    conversation = embedded.post("/conversations", json={"items": [
        {"role": "user", "content": "I am Ada.", "id": "msg_intro"}]}).json()
    first = embedded.post("/responses", json={"model": "fake-echo", "input": "Who am I?",
                                              "conversation": conversation["id"]}).json()
    second = embedded.post("/responses", json={"model": "fake-echo", "input": "Again?",
                                               "conversation": conversation["id"]}).json()
    assert second["output"][0]["content"][0]["text"] == (
        "user: I am Ada.\nuser: Who am I?\nassistant: user: I am Ada.\nuser: Who am I?\n"
        "user: Again?")
    items = embedded.get(f"/conversations/{conversation['id']}/items",
                         params={"order": "asc"}).json()["data"]
    inputs = [embedded.get(f"/responses/{r['id']}/input_items").json()["data"][0]["id"]
              for r in (first, second)]
    assert [item["id"] for item in items] == [
        "msg_intro", inputs[0], first["output"][0]["id"], inputs[1], second["output"][0]["id"]]
    assert embedded.delete(f"/responses/{first['id']}").status_code == 200
    assert embedded.delete(f"/conversations/{conversation['id']}").json()["deleted"] is True
    assert embedded.get(f"/conversations/{conversation['id']}/items").status_code == 404


def test_embedded_background_resume_and_cancel(embedded, clean_upstream):
    from tests.invariants import check_cancelled_stream
    from tests.sse import parse_sse
    from tests.test_e2e_durable import EventReader, deltas, wait_for

    with embedded.stream("POST", "/responses", json={
            "model": "bench-400-25", "input": "embedded cancel", "background": True,
            "stream": True}) as response:
        reader = EventReader(response)
        reader.read_until(lambda e: len(deltas(reader.events)) >= 3)
        response_id = reader.events[0]["response"]["id"]
        cancelled = embedded.post(f"/responses/{response_id}/cancel").json()
        events = reader.read_to_end()
    assert cancelled["status"] == "cancelled"
    assert cancelled["output"] == check_cancelled_stream(events)
    resumed = parse_sse(embedded.get(f"/responses/{response_id}",
                                     params={"stream": "true", "starting_after": 2}).content)
    assert resumed.events == events[3:]
    wait_for(lambda: clean_upstream.stats()["disconnects"] == 1, "the upstream to see the close")


def test_embedded_resolves_references_without_a_chain(embedded, clean_upstream):
    """The embedded PostgreSQL has the item-id index too (the same migrations)."""
    first = embedded.post("/responses", json={"model": "fake-echo", "input": "one"}).json()
    embedded.post("/responses", json={"model": "fake-echo", "input": "aside"})
    answer = embedded.post("/responses", json={"model": "fake-echo", "input": [
        {"type": "item_reference", "id": first["output"][0]["id"]},
        {"role": "user", "content": "two"}]})
    assert answer.status_code == 200, answer.text
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "assistant", "content": "user: one"}, {"role": "user", "content": "two"}]
    missing = embedded.post("/responses", json={"model": "fake-echo", "input": [
        {"type": "item_reference", "id": "msg_nope"}]})
    assert missing.status_code == 400
    assert missing.json() == {"error": {
        "message": "Item with id 'msg_nope' not found.", "type": "invalid_request_error",
        "param": "input[0].id", "code": "item_not_found"}}


def test_embedded_ingests_on_its_own_threads_into_pgvector(embedded):
    """No Celery worker here: a store's files are ingested on threads of the web process,
    into the embedded PostgreSQL's pgvector (its migration created the extension)."""
    import time

    uploaded = embedded.post("/files", data={"purpose": "assistants"},
                             files={"file": ("fox.txt", b"The quick brown fox.")})
    assert uploaded.status_code == 200, uploaded.text
    store = embedded.post("/vector_stores", json={"file_ids": [uploaded.json()["id"]]}).json()
    deadline = time.monotonic() + 30
    while store["status"] == "in_progress" and time.monotonic() < deadline:
        time.sleep(0.1)
        store = embedded.get(f"/vector_stores/{store['id']}").json()
    assert (store["status"], store["file_counts"]["completed"]) == ("completed", 1)
    found = embedded.post(f"/vector_stores/{store['id']}/search", json={"query": "fox"}).json()
    assert [(r["filename"], r["score"], r["content"]) for r in found["data"]] == [
        ("fox.txt", 1.0, [{"type": "text", "text": "The quick brown fox."}])]


EXPECTED_CHUNKS = 6  # the text below, in chunks of 100 tokens
UNSIGN = """
import json
from vector_stores.models import Chunk
chunks = Chunk.objects.filter(store_id=%r)
ingested = dict(chunks.values_list("pk", "signs"))
print(json.dumps([chunks.update(signs=None), {str(pk): bits for pk, bits in ingested.items()}]))
"""
SIGNS = """
import json
from vector_stores.models import Chunk
chunks = Chunk.objects.filter(store_id=%r)
print(json.dumps({str(pk): bits for pk, bits in chunks.values_list("pk", "signs")}))
"""


def test_embedded_signs_the_chunks_an_upgrade_left_unsigned(embedded, embedded_deployment):
    """No celery beat here: the process signs on its own timer the chunks stored without
    sign bits (vector_stores/sign_backfill.py: simulated by setting them NULL), the bits
    ingestion wrote, all of them in one run."""
    from tests.test_e2e_durable import wait_for

    text = " ".join(f"word{n % 97} fox{n % 13}" for n in range(300))
    uploaded = embedded.post("/files", data={"purpose": "assistants"},
                             files={"file": ("many.txt", text.encode())}).json()
    strategy = {"type": "static",
                "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}}
    store = embedded.post("/vector_stores", json={"file_ids": [uploaded["id"]],
                                                  "chunking_strategy": strategy}).json()
    wait_for(lambda: embedded.get(f"/vector_stores/{store['id']}").json()["status"] == "completed",
             "the file to be ingested")
    unsigned, ingested = orjson.loads(
        embedded_deployment.manage("shell", "-c", UNSIGN % store["id"]).splitlines()[-1])
    assert (unsigned, len(ingested)) == (EXPECTED_CHUNKS, EXPECTED_CHUNKS)
    assert all(bits is not None and len(bits) == 1536 for bits in ingested.values())

    def signs():
        return orjson.loads(embedded_deployment.manage(
            "shell", "-c", SIGNS % store["id"]).splitlines()[-1])

    wait_for(lambda: None not in signs().values(), "the timer to sign them")
    assert signs() == ingested
    lines = [orjson.loads(line)["message"] for line in embedded_deployment.logs().splitlines()
             if "stored without sign bits" in line]
    assert lines == [f"signed {EXPECTED_CHUNKS} vector store chunks stored without sign bits"]
