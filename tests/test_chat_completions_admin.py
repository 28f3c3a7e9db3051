"""Stored chat completions in the admin, beside responses: listed with their finish reason
and tokens, shown read-only with their messages and completion; model text as text."""
from datetime import datetime, timezone

import pytest
from django.contrib.auth.models import User

from chat_completions.models import StoredChatCompletion
from responses_app.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_admin_lists_and_shows_a_stored_completion(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    tenant = Tenant.objects.create(name="alice")
    StoredChatCompletion.objects.create(
        id="chatcmpl-abc", tenant=tenant, model="m", metadata={"topic": "t"},
        created_at=datetime(2026, 11, 27, tzinfo=timezone.utc),
        request_messages=[{"role": "user", "content": "<b>hi</b>"}],
        completion={"object": "chat.completion", "id": "chatcmpl-abc", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "hello"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
    listing = client.get("/admin/chat_completions/storedchatcompletion/")
    assert listing.status_code == 200
    row = listing.content.decode()
    assert "chatcmpl-abc" in row and "<td class=\"field-finish_reason\">stop</td>" in row
    assert "<td class=\"field-total_tokens\">4</td>" in row
    page = client.get("/admin/chat_completions/storedchatcompletion/chatcmpl-abc/change/")
    assert page.status_code == 200
    assert "&lt;b&gt;hi&lt;/b&gt;" in page.content.decode()
    assert "<b>hi</b>" not in page.content.decode()
    assert client.get("/admin/").content.decode().count("Stored chat completions") == 1
