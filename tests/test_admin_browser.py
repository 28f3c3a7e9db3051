"""The response browser through Django's test client: the list and its filters, the detail
page of a chain, escaping, the event view, a tenant's usage, with the queries counted."""
import re
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from responses_app.bus import event_bus
from responses_app.bus.entries import Entry
from responses_app.models import Tenant
from responses_app.translation.numbering import EventStamper
from tests.admin_data import assistant_message, stored, user_message

pytestmark = pytest.mark.django_db

LIST = "/admin/responses_app/storedresponse/"


def detail_url(response_id):
    """The admin's link: ids are quoted (`_` becomes `_5F`), as the admin unquotes them."""
    return f"{LIST}{quote(response_id)}/change/"


def listed(response):
    assert response.status_code == 200, response.content[:500]
    return [row.id for row in response.context["rows"]]


@pytest.fixture
def alice():
    return Tenant.objects.create(name="alice")


@pytest.fixture
def bob():
    return Tenant.objects.create(name="bob")


# --- the list ---------------------------------------------------------------------------------

def test_the_list_pages_newest_first_with_a_constant_number_of_queries(
        admin_client, alice, bob, django_assert_num_queries):
    start = timezone.now() - timedelta(hours=2)
    rows = [stored(alice if i % 2 else bob, created_at=start + timedelta(seconds=i))
            for i in range(60)]
    newest_first = [row.id for row in reversed(rows)]

    # session, user, the tenants of the filter, the page
    with django_assert_num_queries(4):
        first = admin_client.get(LIST)
    assert listed(first) == newest_first[:50]
    older = re.search(r'href="\?([^"]+)" id="older"', first.content.decode()).group(1)
    with django_assert_num_queries(4):
        second = admin_client.get(f"{LIST}?{older.replace('&amp;', '&')}")
    assert listed(second) == newest_first[50:]
    assert 'id="older"' not in second.content.decode()


def test_each_filter_keeps_exactly_its_responses(admin_client, alice, bob):
    now = timezone.now()
    plain = stored(alice, created_at=now - timedelta(minutes=5))
    failed = stored(alice, status="failed", model="model-b", created_at=now - timedelta(minutes=4),
                    error={"code": "request_timeout", "message": "no byte for 5 s"})
    background = stored(bob, background=True, created_at=now - timedelta(minutes=3))
    old = stored(bob, created_at=now - timedelta(days=3),
                 input_items=[user_message("the weather in Oslo, please")])

    assert listed(admin_client.get(LIST, {"tenant": alice.pk})) == [failed.id, plain.id]
    assert listed(admin_client.get(LIST, {"status": "failed"})) == [failed.id]
    assert listed(admin_client.get(LIST, {"model": "model-b"})) == [failed.id]
    assert listed(admin_client.get(LIST, {"has_error": "yes"})) == [failed.id]
    assert listed(admin_client.get(LIST, {"has_error": "no"})) == [background.id, plain.id,
                                                                    old.id]
    assert listed(admin_client.get(LIST, {"background": "yes"})) == [background.id]
    day = (now - timedelta(days=3)).date().isoformat()
    assert listed(admin_client.get(LIST, {"created_from": day, "created_to": day})) == [old.id]
    assert listed(admin_client.get(LIST, {"q": failed.id})) == [failed.id]
    assert listed(admin_client.get(LIST, {"q": "weather in oslo"})) == [old.id]
    assert listed(admin_client.get(LIST, {"tenant": bob.pk, "background": "no"})) == [old.id]


def test_a_bad_filter_value_shows_the_error_and_no_rows(admin_client, alice):
    stored(alice)
    response = admin_client.get(LIST, {"status": "exploded", "created_from": "yesterday"})
    assert listed(response) == []
    assert "Select a valid choice" in response.content.decode()
    assert "Enter a valid date" in response.content.decode()


def test_the_list_shows_the_first_input_escaped(admin_client, alice):
    stored(alice, input_items=[user_message("<b>bold</b> question")])
    stored(alice, input_items=[{"id": "fco_1", "type": "function_call_output", "call_id": "c",
                                "output": "<i>sunny</i>"}])
    page = admin_client.get(LIST)
    assert [row.input_preview for row in page.context["rows"]] == [
        "<i>sunny</i>", "<b>bold</b> question"]
    html = page.content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt; question" in html
    assert "&lt;i&gt;sunny&lt;/i&gt;" in html
    assert "<b>bold</b>" not in html and "<i>sunny</i>" not in html


# --- access -----------------------------------------------------------------------------------

def test_the_browser_needs_a_staff_login_and_the_view_permission(client, alice):
    response = stored(alice)
    for url in (LIST, detail_url(response.id), f"{LIST}{response.id}/events/",
                f"/admin/responses_app/tenant/{alice.pk}/usage/"):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith("/admin/login/"), url
    staff = User.objects.create_user("carol", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(LIST).status_code == 403
    assert client.get(detail_url(response.id)).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_storedresponse"))
    assert client.get(detail_url(response.id)).status_code == 200


# --- the detail page --------------------------------------------------------------------------

def tool_chain(tenant):
    """Three turns: a question answered by a function call, its output, a final answer."""
    first = stored(tenant, model="model-tools", instructions="Answer briefly.",
                   input_items=[user_message("Weather in Oslo?")],
                   output=[{"id": "rs_1", "type": "reasoning", "status": "completed",
                            "summary": [], "content": [{"type": "reasoning_text",
                                                        "text": "I should call the tool."}]},
                           {"id": "fc_1", "type": "function_call", "status": "completed",
                            "call_id": "call_oslo", "name": "get_weather",
                            "arguments": '{"city":"Oslo","unit":"C"}'}],
                   created_at=timezone.now() - timedelta(minutes=3))
    second = stored(tenant, model="model-tools", previous=first.id,
                    input_items=[{"id": "fco_1", "type": "function_call_output",
                                  "status": "completed", "call_id": "call_oslo",
                                  "output": '{"temp": 7}'}],
                    output=[assistant_message("It is 7 °C in Oslo.")],
                    created_at=timezone.now() - timedelta(minutes=2))
    third = stored(tenant, model="model-tools", previous=second.id,
                   input_items=[user_message("Thanks!")],
                   output=[assistant_message("You're welcome.")],
                   created_at=timezone.now() - timedelta(minutes=1))
    return first, second, third


def test_the_detail_page_shows_the_whole_chain_as_turns(admin_client, alice,
                                                          django_assert_num_queries):
    first, second, third = tool_chain(alice)
    # session, user, the response, its ancestors, its later turns, the other turns' rows
    with django_assert_num_queries(6):
        response = admin_client.get(detail_url(second.id))
    assert response.status_code == 200
    turns = response.context["timeline"].turns
    assert [turn.response.id for turn in turns] == [first.id, second.id, third.id]
    assert [turn.is_current for turn in turns] == [False, True, False]
    assert [[item.title for item in turn.output_items] for turn in turns] == [
        ["reasoning", "function call get_weather"], ["assistant"], ["assistant"]]
    html = response.content.decode()
    assert f'id="previous-response" href="{detail_url(first.id)}"' in html
    assert f'class="next-response" href="{detail_url(third.id)}"' in html
    assert "{\n  &quot;city&quot;: &quot;Oslo&quot;,\n  &quot;unit&quot;: &quot;C&quot;\n}" in html
    assert "{\n  &quot;temp&quot;: 7\n}" in html
    assert "Answer briefly." in html
    assert "It is 7 °C in Oslo." in html
    assert "1.5 s" in html
    assert "10 in · 5 out" in html


def test_a_chain_of_thirty_turns_costs_the_same_queries(admin_client, alice,
                                                          django_assert_num_queries):
    previous = None
    for i in range(30):
        previous = stored(alice, previous=previous and previous.id,
                          created_at=timezone.now() - timedelta(minutes=60 - i))
        if i == 15:
            middle = previous
    with django_assert_num_queries(6):
        response = admin_client.get(detail_url(middle.id))
    assert len(response.context["timeline"].turns) == 30


def test_ids_the_admin_would_unquote_are_linked_quoted(admin_client, alice):
    # the admin unquotes `_25` to `%`: a raw `resp_25…` in a link would be a 404
    response = stored(alice, response_id="resp_25" + "ab" * 23)
    html = admin_client.get(LIST).content.decode()
    assert f'href="{LIST}resp_5F25{"ab" * 23}/change/"' in html
    page = admin_client.get(f"{LIST}resp_5F25{'ab' * 23}/change/")
    assert page.context["response"] == response


def test_a_branch_shows_both_continuations(admin_client, alice):
    root = stored(alice, created_at=timezone.now() - timedelta(minutes=3))
    older = stored(alice, previous=root.id, created_at=timezone.now() - timedelta(minutes=2))
    newer = stored(alice, previous=root.id, created_at=timezone.now() - timedelta(minutes=1))
    response = admin_client.get(detail_url(root.id))
    timeline = response.context["timeline"]
    assert [turn.response.id for turn in timeline.turns] == [root.id, newer.id]
    assert timeline.next_ids == [newer.id, older.id]
    assert timeline.turns[0].branches == [older.id]


def test_model_text_is_shown_as_text_never_as_markup(admin_client, alice):
    attack = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    response = stored(alice, input_items=[user_message(attack)],
                      output=[assistant_message(attack),
                              {"id": "fc_2", "type": "function_call", "call_id": "c",
                               "name": "<script>", "arguments": '{"a": "</pre><script>"}'}],
                      instructions=attack)
    html = admin_client.get(detail_url(response.id)).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "</pre><script>" not in html
    # the input, the output, the instructions, and the instructions in the request parameters
    assert html.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 4
    assert "function call &lt;script&gt;" in html


def test_mcp_and_unknown_items_render_readably(admin_client, alice):
    output = [
        {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "docs",
         "tools": [{"name": "search", "description": "Search the docs",
                    "input_schema": {}}], "error": None},
        {"id": "mcpr_1", "type": "mcp_approval_request", "server_label": "docs",
         "name": "search", "arguments": '{"q":"x"}'},
        {"id": "mcp_1", "type": "mcp_call", "server_label": "docs", "name": "search",
         "arguments": '{"q":"x"}', "output": "3 results", "error": None,
         "status": "completed"},
        {"id": "mcp_2", "type": "mcp_call", "server_label": "docs", "name": "fetch",
         "arguments": "{}", "output": None, "error": "tools/call timeout after 60s",
         "status": "failed"},
        {"id": "x_1", "type": "image_generation_call", "status": "completed",
         "result": "<b>not html</b>"},
    ]
    response = stored(alice, output=output, input_items=[
        {"id": "mcpa_1", "type": "mcp_approval_response", "approval_request_id": "mcpr_0",
         "approve": True, "reason": None}])
    page = admin_client.get(detail_url(response.id))
    turn = page.context["current"]
    assert [item.title for item in turn.output_items] == [
        "MCP tools of docs", "approval requested: docs.search", "MCP call docs.search",
        "MCP call docs.fetch", "image_generation_call"]
    assert [item.title for item in turn.input_items] == ["approval granted"]
    html = page.content.decode()
    assert "search: Search the docs" in html
    assert "3 results" in html
    assert '<pre class="block block-error">tools/call timeout after 60s</pre>' in html
    assert "&lt;b&gt;not html&lt;/b&gt;" in html


def test_a_failed_run_shows_its_error(admin_client, alice):
    response = stored(alice, status="failed", output=[], usage=None,
                      error={"code": "request_timeout",
                             "message": "The upstream sent nothing for 5 s."})
    html = admin_client.get(detail_url(response.id)).content.decode()
    assert ('<div class="error-box" id="response-error"><strong>request_timeout</strong>: '
            "The upstream sent nothing for 5 s.</div>") in html


def test_the_detail_names_the_upstream_replica_that_served_it(admin_client, alice):
    served = stored(alice)
    served.upstream_replica = "http://vllm-2:8000/v1"
    served.save(update_fields=["upstream_replica"])
    unknown = stored(alice)  # stored before replicas were recorded
    assert ('<dd id="upstream-replica">http://vllm-2:8000/v1</dd>'
            in admin_client.get(detail_url(served.id)).content.decode())
    assert '<dd id="upstream-replica">–</dd>' in admin_client.get(
        detail_url(unknown.id)).content.decode()


def test_an_unknown_response_is_a_404(admin_client):
    assert admin_client.get(detail_url("resp_missing")).status_code == 404
    assert admin_client.get(f"{LIST}resp_missing/events/").status_code == 404


# --- the event view (the embedded in-process bus here; Redis in the browser test) ------------

def write_events(response_id, events_per_entry):
    writer = event_bus().writer(response_id)
    stamper = EventStamper()
    for index, types in enumerate(events_per_entry):
        first = stamper.next_sequence_number
        events = stamper.stamp([{"type": kind, "delta": f"<d{first + i}>"}
                                for i, kind in enumerate(types)])
        async_to_sync(writer.append)(Entry(first, stamper.next_sequence_number - 1, events,
                                           end=index == len(events_per_entry) - 1))


def test_the_event_view_lists_the_stored_events_in_order(admin_client, alice,
                                                           django_assert_num_queries):
    response = stored(alice)
    write_events(response.id, [["response.created", "response.in_progress"],
                               ["response.output_text.delta"] * 3, ["response.completed"]])
    with django_assert_num_queries(3):
        page = admin_client.get(f"{LIST}{response.id}/events/")
    log = page.context["log"]
    assert [(row.sequence_number, row.type) for row in log.rows] == [
        (0, "response.created"), (1, "response.in_progress"),
        (2, "response.output_text.delta"), (3, "response.output_text.delta"),
        (4, "response.output_text.delta"), (5, "response.completed")]
    assert log.rows[0].offset_ms == 0
    assert all(row.offset_ms is not None for row in log.rows)
    assert log.expires_in is not None
    html = page.content.decode()
    assert "6 events, kept for 23 h 59 min more." in html
    assert "&lt;d2&gt;" in html and "<d2>" not in html


def test_the_event_view_says_when_the_stream_is_gone(admin_client, alice):
    response = stored(alice)
    html = admin_client.get(f"{LIST}{response.id}/events/").content.decode()
    assert 'id="events-expired"' in html


# --- usage ------------------------------------------------------------------------------------

def test_tenant_usage_counts_per_day_and_per_model(admin_client, alice, bob,
                                                   django_assert_num_queries):
    today = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    yesterday = today - timedelta(days=1)
    stored(alice, model="model-a", created_at=today, usage=(100, 20))
    stored(alice, model="model-a", created_at=today, usage=(50, 10))
    stored(alice, model="model-b", created_at=yesterday, status="failed", usage=None,
           error={"code": "server_error", "message": "boom"})
    stored(alice, model="model-b", created_at=today - timedelta(days=40), usage=(1, 1))
    stored(bob, model="model-a", created_at=today, usage=(7, 7))
    # session, user, the tenant, per day and model, error codes, latest failures
    with django_assert_num_queries(6):
        page = admin_client.get(f"/admin/responses_app/tenant/{alice.pk}/usage/")
    usage = page.context["usage"]
    assert [(d["day"], d["responses"], d["failed"], d["input_tokens"], d["output_tokens"])
            for d in usage.per_day] == [(today.date(), 2, 0, 150, 30),
                                        (yesterday.date(), 1, 1, 0, 0)]
    assert [(m["model"], m["responses"], m["failed"]) for m in usage.top_models] == [
        ("model-a", 2, 0), ("model-b", 1, 1)]
    assert usage.totals == {"responses": 3, "failed": 1, "input_tokens": 150,
                            "output_tokens": 30}
    assert [(e["error_code"], e["responses"]) for e in usage.error_codes] == [("server_error", 1)]
    week = admin_client.get(f"/admin/responses_app/tenant/{alice.pk}/usage/", {"days": "90"})
    assert week.context["usage"].totals["responses"] == 4


def test_phase_and_custom_tool_calls_are_shown(admin_client, alice):
    output = [
        {**assistant_message("Patching."), "phase": "commentary"},
        {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch",
         "input": "*** Begin Patch\n<b>x</b>", "status": "completed"},
    ]
    response = stored(alice, output=output, input_items=[
        {**assistant_message("Earlier."), "phase": "final_answer"},
        {"id": "ctco_1", "type": "custom_tool_call_output", "call_id": "call_0",
         "output": "Done", "status": "completed"}])
    page = admin_client.get(detail_url(response.id))
    turn = page.context["current"]
    assert [(item.title, item.meta) for item in turn.output_items] == [
        ("assistant", [("phase", "commentary")]),
        ("custom tool call apply_patch", [("call_id", "call_1")])]
    assert [(item.title, item.meta) for item in turn.input_items] == [
        ("assistant", [("phase", "final_answer")]),
        ("custom tool output", [("call_id", "call_0")])]
    html = page.content.decode()
    assert '<span class="meta">phase commentary</span>' in html
    assert "*** Begin Patch\n&lt;b&gt;x&lt;/b&gt;" in html
