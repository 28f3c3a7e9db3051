"""Upgrading a database whose responses were stored before responses_app 0008 (the history
read's generated columns): the old rows get their output text and compaction flags, a chain
of them continues (exactly the history the upstream receives), their items are still found
as item references (the GIN index of 0007), and a later write of a row's response object
keeps its columns in step."""
import os

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.servers import Deployment, drop_postgres_database, fresh_postgres_database

pytestmark = pytest.mark.services

BEFORE = ("responses_app", "0007_item_reference_indexes")


def _message(item_id: str, role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"id": item_id, "type": "message", "role": role, "status": "completed",
            "content": [{"type": kind, "text": text}]}


COMPACTION = {"id": "cmp_old", "type": "compaction", "encrypted_content": "sealed"}
ROWS = [  # id, previous_response_id, input items, output items
    ("resp_old_1", None, [_message("msg_in_1", "user", "alpha beta")],
     [_message("msg_out_1", "assistant", "gamma delta")]),
    ("resp_old_2", "resp_old_1", [_message("msg_in_2", "user", "epsilon")],
     [_message("msg_out_2", "assistant", "zeta")]),
    ("resp_old_c", None, [COMPACTION], [{**COMPACTION, "id": "cmp_out"}]),
]
COLUMNS = ("SELECT id, output_text::jsonb, input_compaction, output_compaction FROM responses"
           " ORDER BY id")


@pytest.fixture
def old_database(tmp_path, upstream):
    name = f"gateway_history_columns_{os.getpid()}"
    url = fresh_postgres_database(name)
    deployment = Deployment(tmp_path, {
        "DATABASE_URL": url, "UPSTREAM_BASE_URL": upstream.base_url, "LOG_LEVEL": "WARNING",
        "SECRET_KEY": "test-secret-key-" + "x" * 40}, worker=False)
    deployment.manage("migrate", "auth", "-v0")
    deployment.manage("migrate", *BEFORE, "-v0")
    try:
        yield deployment, url
    finally:
        deployment.stop()
        drop_postgres_database(name)


def _store_old_rows(url: str, tenant: str) -> None:
    with psycopg.connect(url) as conn:
        for response_id, previous, input_items, output in ROWS:
            conn.execute(
                "INSERT INTO responses (id, tenant_id, status, model, store, background,"
                " previous_response_id, created_at, request, input_items, resource)"
                " SELECT %s, id, 'completed', 'fake-echo', true, false, %s, now(), %s, %s, %s"
                " FROM responses_app_tenant WHERE name = %s",
                (response_id, previous, Jsonb({"instructions": None, "include": [],
                                               "params": {"tools": []}}),
                 Jsonb(input_items), Jsonb({"id": response_id, "object": "response",
                                            "status": "completed", "output": output}),
                 tenant))


def _rows(url: str, query: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()


def test_old_responses_get_their_columns_and_their_chain_continues(old_database, clean_upstream):
    deployment, url = old_database
    key = deployment.new_api_key("alice")
    _store_old_rows(url, "alice")

    deployment.manage("migrate", "-v0")
    deployment.manage("upstream_route", "set", "echo", "--model", "fake-echo",
                      "--base-url", clean_upstream.base_url, "--token-counter", "vllm")

    assert _rows(url, COLUMNS) == [(response_id, output, response_id == "resp_old_c",
                                    response_id == "resp_old_c")
                                   for response_id, _, _, output in ROWS]
    deployment.start()
    with deployment.client(key) as api:
        reply = api.post("/responses/input_tokens", json={
            "model": "fake-echo", "previous_response_id": "resp_old_2",
            "input": [{"type": "item_reference", "id": "msg_out_1"},
                      {"role": "user", "content": "eta"}]})
    # the fake upstream counts one token per word of "user: alpha beta / assistant: gamma
    # delta / user: epsilon / assistant: zeta / gamma delta / user: eta"
    assert reply.json() == {"object": "response.input_tokens", "input_tokens": 14}
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "user", "content": "alpha beta"},
        {"role": "assistant", "content": "gamma delta"},
        {"role": "user", "content": "epsilon"},
        {"role": "assistant", "content": "zeta\ngamma delta"},
        {"role": "user", "content": "eta"}]

    with psycopg.connect(url) as conn:
        conn.execute("UPDATE responses SET resource = resource || '{\"output\": []}'"
                     " WHERE id = 'resp_old_c'")
        conn.execute("UPDATE responses SET resource = resource - 'output'"
                     " WHERE id = 'resp_old_1'")
    assert _rows(url, COLUMNS) == [("resp_old_1", [], False, False),
                                   ("resp_old_2", ROWS[1][3], False, False),
                                   ("resp_old_c", [], True, False)]
