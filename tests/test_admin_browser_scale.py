"""The browser on 100,000 stored responses: every list filter but text search reads an
index (no sequential scan of the table), and the pages keep their query counts; the
watchdog's and the timeline's reads take the partial indexes made for them."""
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.utils import timezone

from responses_app.browser.listing import page_query
from responses_app.browser.timeline import LATER_SQL
from responses_app.models import ResponseStatus, StoredResponse, Tenant

pytestmark = pytest.mark.django_db

ROWS = 100_000
FILL_SQL = """
INSERT INTO responses (id, tenant_id, status, model, store, background, previous_response_id,
                       created_at, completed_at, error_code, request, input_items, resource,
                       input_tokens, output_tokens)
SELECT 'resp_' || lpad(to_hex(i), 48, '0'),
       CASE WHEN i > %(rows)s - 10000 THEN %(bob)s ELSE %(alice)s END,
       CASE WHEN i %% 50 = 0 THEN 'failed' ELSE 'completed' END,
       'model-' || (i %% 7), true, i %% 20 = 0,
       CASE WHEN i > 1 THEN 'resp_' || lpad(to_hex(i - 1), 48, '0') END,
       now() - make_interval(secs => i * 30),
       now() - make_interval(secs => i * 30) + interval '1.2 seconds',
       CASE WHEN i %% 50 = 0 THEN 'server_error' END,
       '{"instructions": null, "params": {}, "include": []}'::jsonb,
       jsonb_build_array(jsonb_build_object('type', 'message', 'role', 'user', 'content',
           jsonb_build_array(jsonb_build_object('type', 'input_text', 'text', 'question ' || i)))),
       jsonb_build_object('status', 'completed', 'output', '[]'::jsonb, 'usage', NULL),
       100 + i %% 13, 20 + i %% 5
  FROM generate_series(1, %(rows)s) AS i
"""


@pytest.fixture
def tenants():
    alice, bob = Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")
    with connection.cursor() as cursor:
        cursor.execute(FILL_SQL, {"alice": alice.pk, "bob": bob.pk, "rows": ROWS})
        cursor.execute("ANALYZE responses")
    return alice, bob


def test_on_100000_responses_lists_read_indexes_and_pages_keep_their_queries(
        admin_client, tenants, django_assert_num_queries):
    alice, bob = tenants
    week_ago = (timezone.now() - timedelta(days=7)).date()
    for filters in [{}, {"tenant": bob}, {"status": "failed"}, {"model": "model-3"},
                    {"has_error": "yes"}, {"background": "yes"},
                    {"created_from": week_ago, "created_to": week_ago},
                    {"q": f"resp_{12345:048x}"},
                    {"tenant": alice, "status": "completed", "model": "model-1"},
                    {"before": (timezone.now() - timedelta(days=20), "resp_z")}]:
        plan = page_query(filters).explain()
        assert "Seq Scan on responses" not in plan, (filters, plan)
    running = StoredResponse.objects.filter(status=ResponseStatus.IN_PROGRESS)
    assert "Index Scan using responses_not_completed" in running.explain()
    with connection.cursor() as cursor:  # both steps of the walk: the first and r.previous…
        cursor.execute("EXPLAIN " + LATER_SQL, [f"resp_{1:048x}", alice.pk, alice.pk, 50, 200])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert plan.count("Index Scan using responses_continuing") == 2, plan

    with django_assert_num_queries(4):
        assert admin_client.get("/admin/responses_app/storedresponse/").status_code == 200
    # a response in the middle of alice's 90,000-turn chain: 50 turns before and after it
    middle, earlier, later = (f"resp_{n:048x}" for n in (50_000, 50_000 - 51, 50_000 + 51))
    with django_assert_num_queries(6):
        page = admin_client.get(f"/admin/responses_app/storedresponse/{quote(middle)}/change/")
    assert page.status_code == 200
    timeline = page.context["timeline"]
    assert (len(timeline.turns), timeline.earlier_id, timeline.later_id) == (101, earlier, later)
    with django_assert_num_queries(6):
        assert admin_client.get(f"/admin/responses_app/tenant/{alice.pk}/usage/").status_code == 200
