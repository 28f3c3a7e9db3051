"""Upgrading a database of the old layout, where Conversation and ConversationItem were
responses_app's models (its migrations up to 0005): the move to the `conversations` app
changes Django's state only, so the conversations and their items are still there and
served, new items land after the old ones, and the permissions on them follow the models."""
import os

import psycopg
from psycopg.types.json import Jsonb
import pytest

from tests.servers import Deployment, drop_postgres_database, fresh_postgres_database

pytestmark = pytest.mark.services

OLD_LAYOUT = ("responses_app", "0005_fewer_response_indexes")
OLD_ITEMS = [
    {"id": "msg_old_1", "type": "message", "role": "user", "status": "completed",
     "content": [{"type": "input_text", "text": "I like tea."}]},
    {"id": "msg_old_2", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Noted.", "annotations": []}]},
]
CONTENT_TYPES = "SELECT app_label, model FROM django_content_type WHERE model LIKE 'conversation%'"
PERMISSIONS = ("SELECT p.codename, c.app_label FROM auth_permission p JOIN django_content_type c"
               " ON c.id = p.content_type_id WHERE c.model = 'conversation' ORDER BY p.codename")


@pytest.fixture
def old_layout(tmp_path):
    """A Postgres database migrated as the old layout left it, and a deployment on it
    (embedded bus and worker: no Redis needed)."""
    name = f"gateway_conversations_move_{os.getpid()}"
    url = fresh_postgres_database(name)
    deployment = Deployment(tmp_path, {"DATABASE_URL": url}, worker=False)
    deployment.manage("migrate", "auth", "-v0")
    deployment.manage("migrate", *OLD_LAYOUT, "-v0")
    try:
        yield deployment, url
    finally:
        deployment.stop()
        drop_postgres_database(name)


def _add_old_conversation(url: str, tenant: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO conversations (id, tenant_id, metadata, created_at) SELECT 'conv_old',"
            " id, '{\"topic\": \"tea\"}', '2026-01-02T03:04:05Z' FROM responses_app_tenant"
            " WHERE name = %s", (tenant,))
        for item in OLD_ITEMS:
            conn.execute(
                "INSERT INTO conversation_items (conversation_id, item_id, item, created_at,"
                " response_id) VALUES ('conv_old', %s, %s, '2026-01-02T03:04:05Z', NULL)",
                (item["id"], Jsonb(item)))


def _rows(url: str, query: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return sorted(conn.execute(query).fetchall())


def test_migrating_the_old_layout_keeps_conversations_and_their_permissions(old_layout):
    deployment, url = old_layout
    key = deployment.new_api_key("alice")
    _add_old_conversation(url, "alice")
    assert _rows(url, CONTENT_TYPES) == [("responses_app", "conversation"),
                                         ("responses_app", "conversationitem")]
    permissions_before = _rows(url, PERMISSIONS)

    deployment.manage("migrate", "-v0")

    assert _rows(url, CONTENT_TYPES) == [("conversations", "conversation"),
                                         ("conversations", "conversationitem")]
    assert _rows(url, PERMISSIONS) == [(codename, "conversations")
                                       for codename, _ in permissions_before]
    assert [codename for codename, _ in permissions_before] == [
        "add_conversation", "change_conversation", "delete_conversation", "view_conversation"]
    deployment.start()
    with deployment.client(key) as api:
        assert api.get("/conversations/conv_old").json() == {
            "id": "conv_old", "object": "conversation", "created_at": 1767323045,
            "metadata": {"topic": "tea"}}
        added = api.post("/conversations/conv_old/items", json={"items": [
            {"id": "msg_new", "role": "user", "content": "And coffee?"}]}).json()["data"]
        assert added == [{"id": "msg_new", "type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "And coffee?"}],
                          "status": "completed"}]
        assert api.get("/conversations/conv_old/items", params={"order": "asc"}).json() == {
            "object": "list", "data": [*OLD_ITEMS, *added], "first_id": "msg_old_1",
            "last_id": "msg_new", "has_more": False}
