"""The admin browser shows compaction items readably (their summary, to staff only) and
marks the turns that were compacted or asked for truncation "auto"."""
import pytest
from django.contrib.admin.utils import quote
from django.test import override_settings

from responses_app.context.compaction_items import compaction_item
from responses_app.models import Tenant
from tests.admin_data import stored, user_message

pytestmark = pytest.mark.django_db

LIST = "/admin/responses_app/storedresponse/"


def detail(client, response):
    return client.get(f"{LIST}{quote(response.id)}/change/")


def test_a_compaction_shows_its_summary_and_marks_the_turn(admin_client):
    alice = Tenant.objects.create(name="alice")
    first = stored(alice)
    second = stored(alice, previous=first.id, input_items=[
        user_message("go on"), compaction_item("The user <b>wants</b> a haiku.")])
    page = detail(admin_client, second)
    [before, turn] = page.context["timeline"].turns
    assert [item.title for item in turn.input_items] == ["user", "compaction"]
    [block] = turn.input_items[1].blocks
    assert (block.label, block.text) == ("summary (replaces the conversation before it)",
                                         "The user <b>wants</b> a haiku.")
    assert (before.compacted, turn.compacted) == (False, True)
    html = page.content.decode()
    assert "The user &lt;b&gt;wants&lt;/b&gt; a haiku." in html
    assert html.count('class="status context-mark"') == 1


def test_a_compaction_sealed_elsewhere_is_not_readable(admin_client):
    alice = Tenant.objects.create(name="alice")
    with override_settings(SECRET_KEY="another-deployment-" + "z" * 40):
        foreign = compaction_item("secret summary")
    page = detail(admin_client, stored(alice, input_items=[foreign]))
    [block] = page.context["current"].input_items[0].blocks
    assert (block.label, block.style) == ("summary", "error")
    assert "secret summary" not in page.content.decode()


def test_a_turn_that_asked_for_auto_truncation_is_marked(admin_client):
    alice = Tenant.objects.create(name="alice")
    response = stored(alice)
    response.request["params"]["truncation"] = "auto"
    response.save()
    page = detail(admin_client, response)
    assert page.context["current"].truncation_auto is True
    assert "truncation auto</span>" in page.content.decode()


def test_a_staff_member_without_the_view_permission_sees_no_summary(client):
    from django.contrib.auth.models import User

    alice = Tenant.objects.create(name="alice")
    response = stored(alice, input_items=[compaction_item("private summary")])
    User.objects.create_user("eve", password="pw", is_staff=True)
    client.login(username="eve", password="pw")
    page = detail(client, response)
    assert page.status_code == 403
    assert b"private summary" not in page.content
