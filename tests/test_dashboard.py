"""The dashboard's aggregates, exactly, on a fixed set of responses: every window, all
tenants and one, empty windows, the hour and day rollups, the beat task; the charts; the page
(staff only, its links)."""
from datetime import datetime, timedelta, timezone
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone as django_time

from dashboard import charts
from dashboard.live import now_state
from dashboard.models import BucketCounts, RolledUpBucket
from dashboard.rollup import roll_up
from dashboard.selectors import dashboard
from dashboard.windows import window
from responses_app.models import StoredResponse, Tenant
from upstreams.models import UpstreamRoute
from upstreams.routing import forget_routes

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 30, tzinfo=timezone.utc)
EMPTY = (None, None, None)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def row(tenant, created: str, *, model="model-a", status="completed", first_delta=None,
        total=None, tokens=(None, None), error=None) -> StoredResponse:
    """A response: `first_delta` and `total` in seconds after its creation (None: none)."""
    created_at = at(created)
    return StoredResponse.objects.create(
        id=f"resp_{tenant.name}{created_at:%m%d%H%M%S}", tenant=tenant, status=status,
        model=model, created_at=created_at, error_code=error,
        first_delta_at=created_at + timedelta(seconds=first_delta) if first_delta else None,
        completed_at=created_at + timedelta(seconds=total) if total else None,
        input_tokens=tokens[0], output_tokens=tokens[1],
        request={}, input_items=[], resource={"status": status})


@pytest.fixture
def tenants():
    alice, bob = Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")
    # the last hour
    row(alice, "2026-11-20 12:10:00", first_delta=0.2, total=1.0, tokens=(10, 5))
    row(alice, "2026-11-20 12:10:30", first_delta=0.4, total=2.0, tokens=(20, 7))
    row(alice, "2026-11-20 12:20:00", model="model-b", status="failed", first_delta=0.3,
        tokens=(3, 0), error="server_error")
    row(bob, "2026-11-20 12:20:10", model="model-b", first_delta=0.1, total=3.0,
        tokens=(100, 50))
    row(bob, "2026-11-20 12:25:00", status="failed", error="rate_limit_exceeded")
    row(bob, "2026-11-20 12:29:00", status="in_progress")
    # the last 24 hours
    row(alice, "2026-11-20 02:15:00", model="model-b", status="incomplete", first_delta=0.5,
        tokens=(40, 16))
    row(bob, "2026-11-19 14:00:00", status="cancelled")
    # the last 30 days
    row(alice, "2026-11-01 10:00:00", first_delta=0.2, total=1.0, tokens=(1000, 100))
    row(alice, "2026-11-01 11:00:00", first_delta=0.6, total=3.0, tokens=(2000, 200))
    row(bob, "2026-11-18 09:00:00", model="model-b", status="failed", first_delta=0.25,
        tokens=(5, 1), error="server_error")
    # before every window
    row(alice, "2026-10-01 09:00:00", tokens=(7, 7))
    return alice, bob


def shown(data, field: str) -> dict:
    """The buckets with something in them: {"MM-DD HH:MM": value}."""
    return {f"{entry['bucket']:%m-%d %H:%M}": {k: v for k, v in entry.items() if k != "bucket"}
            for entry in getattr(data, field)
            if any(v for k, v in entry.items() if k != "bucket")}


def latencies(data) -> dict:
    return {f"{entry.bucket:%m-%d %H:%M}": (entry.first_delta, entry.first_delta_n,
                                           entry.total, entry.total_n)
            for entry in data.latency if entry.first_delta_n or entry.total_n}


def counts(completed=0, failed=0, incomplete=0, cancelled=0, running=0) -> dict:
    return {"completed": completed, "failed": failed, "incomplete": incomplete,
            "cancelled": cancelled, "running": running,
            "total": completed + failed + incomplete + cancelled + running}


def test_last_hour_of_every_tenant_by_minute(tenants):
    data = dashboard(window("hour", NOW))
    assert (len(data.requests), data.requests[0]["bucket"], data.requests[-1]["bucket"]) == (
        60, at("2026-11-20 11:31"), at("2026-11-20 12:30"))
    assert shown(data, "requests") == {
        "11-20 12:10": counts(completed=2), "11-20 12:20": counts(completed=1, failed=1),
        "11-20 12:25": counts(failed=1), "11-20 12:29": counts(running=1)}
    assert shown(data, "tokens") == {"11-20 12:10": {"input": 30, "output": 12},
                                     "11-20 12:20": {"input": 103, "output": 50}}
    assert data.totals == {"responses": 6, "completed": 3, "failed": 2, "incomplete": 0,
                           "cancelled": 0, "running": 1, "input": 133, "output": 62}
    assert latencies(data) == {
        "11-20 12:10": ((300.0, 390.0, 398.0), 2, (1500.0, 1950.0, 1990.0), 2),
        "11-20 12:20": ((200.0, 290.0, 298.0), 2, (3000.0, 3000.0, 3000.0), 1)}


def test_last_24_hours_by_hour(tenants):
    data = dashboard(window("day", NOW))
    assert (len(data.requests), data.requests[0]["bucket"]) == (24, at("2026-11-19 13:00"))
    assert shown(data, "requests") == {
        "11-19 14:00": counts(cancelled=1), "11-20 02:00": counts(incomplete=1),
        "11-20 12:00": counts(completed=3, failed=2, running=1)}
    assert data.errors == [{"error_code": "rate_limit_exceeded", "responses": 1},
                           {"error_code": "server_error", "responses": 1}]
    assert latencies(data) == {
        "11-20 02:00": ((500.0, 500.0, 500.0), 1, EMPTY, 0),
        "11-20 12:00": ((250.0, 385.0, 397.0), 4, (2000.0, 2900.0, 2980.0), 3)}
    # the hours that ended an hour ago (up to 10:00-11:00) were rolled up, the rest is raw
    assert sorted(RolledUpBucket.objects.filter(unit="hour").values_list("start", flat=True)) \
        == [at("2026-11-19 13:00") + timedelta(hours=n) for n in range(22)]


def test_30_days_of_every_tenant_from_rollups_and_today(tenants):
    data = dashboard(window("30d", NOW))
    assert (len(data.requests), data.requests[0]["bucket"]) == (30, at("2026-10-22 00:00"))
    assert shown(data, "requests") == {
        "11-01 00:00": counts(completed=2), "11-18 00:00": counts(failed=1),
        "11-19 00:00": counts(cancelled=1),
        "11-20 00:00": counts(completed=3, failed=2, incomplete=1, running=1)}
    assert shown(data, "tokens") == {"11-01 00:00": {"input": 3000, "output": 300},
                                     "11-18 00:00": {"input": 5, "output": 1},
                                     "11-20 00:00": {"input": 173, "output": 78}}
    assert data.totals == {"responses": 11, "completed": 5, "failed": 3, "incomplete": 1,
                           "cancelled": 1, "running": 1, "input": 3178, "output": 379}
    alice, bob = tenants
    assert [{k: v for k, v in entry.items() if k != "link"} for entry in data.top_tenants] == [
        {"tenant_id": alice.pk, "name": "alice", "responses": 6, "input": 3073, "output": 328,
         "tokens": 3401},
        {"tenant_id": bob.pk, "name": "bob", "responses": 5, "input": 105, "output": 51,
         "tokens": 156}]
    assert data.top_models == [
        {"model": "model-a", "responses": 7, "input": 3030, "output": 312, "tokens": 3342},
        {"model": "model-b", "responses": 4, "input": 148, "output": 67, "tokens": 215}]
    assert data.errors == [{"error_code": "server_error", "responses": 2},
                           {"error_code": "rate_limit_exceeded", "responses": 1}]
    assert latencies(data) == {
        "11-01 00:00": ((400.0, 580.0, 596.0), 2, (2000.0, 2900.0, 2980.0), 2),
        "11-18 00:00": ((250.0, 250.0, 250.0), 1, EMPTY, 0),
        "11-20 00:00": ((300.0, 480.0, 496.0), 5, (2000.0, 2900.0, 2980.0), 3)}
    # the closed days (ended an hour ago: up to yesterday) were rolled up, today's closed
    # hours too (its counts; its latency is today's responses), and the rest is raw
    assert sorted(RolledUpBucket.objects.filter(unit="day").values_list("start", flat=True)) \
        == [at("2026-10-22") + timedelta(days=n) for n in range(29)]
    assert sorted(RolledUpBucket.objects.filter(unit="hour").values_list("start", flat=True)) \
        == [at("2026-11-20") + timedelta(hours=n) for n in range(11)]


def test_one_tenant(tenants):
    alice, bob = tenants
    data = dashboard(window("30d", NOW), bob.pk)
    assert data.totals == {"responses": 5, "completed": 1, "failed": 2, "incomplete": 0,
                           "cancelled": 1, "running": 1, "input": 105, "output": 51}
    assert [entry["name"] for entry in data.top_tenants] == ["bob"]
    assert [(entry["model"], entry["responses"]) for entry in data.top_models] == [
        ("model-b", 2), ("model-a", 3)]
    assert data.errors == [{"error_code": "rate_limit_exceeded", "responses": 1},
                           {"error_code": "server_error", "responses": 1}]
    assert latencies(data) == {
        "11-18 00:00": ((250.0, 250.0, 250.0), 1, EMPTY, 0),
        "11-20 00:00": ((100.0, 100.0, 100.0), 1, (3000.0, 3000.0, 3000.0), 1)}
    assert dashboard(window("hour", NOW), alice.pk).totals["responses"] == 3


def test_empty_windows(tenants):
    carol = Tenant.objects.create(name="carol")
    quiet = datetime(2026, 12, 30, 8, 0, tzinfo=timezone.utc)  # a month after the last one
    for data in (dashboard(window("30d", NOW), carol.pk), dashboard(window("hour", quiet)),
                 dashboard(window("30d", quiet))):
        assert (shown(data, "requests"), shown(data, "tokens"), latencies(data)) == ({}, {}, {})
        assert (data.top_tenants, data.top_models, data.errors) == ([], [], [])
        assert data.totals == {"responses": 0, **dict.fromkeys(
            ("completed", "failed", "incomplete", "cancelled", "running", "input", "output"), 0)}
        assert len(data.latency) == len(data.requests) == len(data.window.buckets)


def test_a_bucket_is_rolled_up_once_and_keeps_its_counts(tenants):
    assert roll_up("day", at("2026-11-01")) is True
    assert roll_up("day", at("2026-11-01")) is False
    StoredResponse.objects.filter(created_at__date="2026-11-01").delete()
    assert list(BucketCounts.objects.filter(unit="day", start=at("2026-11-01")).values_list(
        "model", "status", "responses", "input_tokens", "output_tokens")) == [
        ("model-a", "completed", 2, 3000, 300)]
    assert dashboard(window("30d", NOW)).totals["responses"] == 11  # the rollup's
    assert dashboard(window("day", at("2026-11-01 12:00"))).totals["responses"] == 0  # raw


def test_the_beat_task_rolls_up_the_closed_buckets_of_both_windows(tenants):
    from gateway.celery import app

    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["dashboard-rollup"]
    task = app.tasks[entry["task"]]
    assert task() == 24 + 30
    assert task() == 0
    out = StringIO()
    call_command("dashboard_rollup", stdout=out)
    assert out.getvalue() == "0 buckets rolled up\n"


def test_now_per_route(tenants):
    UpstreamRoute.objects.create(name="b-server", model_pattern="model-b",
                                 base_url="http://127.0.0.1:9/v1")
    forget_routes()
    try:
        state = now_state(NOW)
    finally:
        forget_routes()
    assert (state.in_flight, state.queued, state.run_queue, state.workers,
            state.workers_note) == (1, 0, None, 1, "in-process (embedded mode)")
    assert [(r.name, r.serves, r.in_flight, r.recent, r.recent_failed, r.error_rate)
            for r in state.routes] == [
        ("b-server", "model-b", 0, 2, 1, 50.0),
        ("default", "every other model", 1, 1, 1, 100.0)]
    alice, _ = tenants
    assert [(r.in_flight, r.recent, r.recent_failed) for r in now_state(NOW, alice.pk).routes] \
        == [(0, 1, 1), (0, 0, 0)]


def test_charts_draw_each_value_with_its_tooltip():
    bars = charts.stacked_bars("Responses", ["12:00", "13:00"],
                               [("completed", "s-completed", [3, 0]),
                                ("failed", "s-failed", [1, 2])])
    assert bars.count("<rect ") == 3
    assert "<title>12:00: 3 completed</title>" in bars and "<title>13:00: 2 failed</title>" in bars
    line = charts.lines("Latency", ["a", "b", "c"], [("p50", "l-p50", [10.5, None, 30])], " ms")
    assert line.count("<circle ") == 2 and line.count(" M") == 1  # the gap starts a new line
    assert "<title>c: 30 ms p50</title>" in line
    assert [charts.nice_ceiling(v) for v in (0, 7, 12, 180, 2400)] == [1, 10, 20, 200, 2500]


def test_staff_only_and_its_links(client, admin_client, django_user_model):
    alice, bob = Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")
    recent = (django_time.now() - timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M:%S")
    failed = row(alice, recent, status="failed", error="server_error", tokens=(4, 0))
    row(bob, recent, status="failed", error="server_error")
    assert client.get("/admin/").status_code == 302
    client.force_login(django_user_model.objects.create_user("eve", password="x"))
    assert client.get("/admin/").status_code == 302  # not staff
    page = admin_client.get(f"/admin/?window=hour&tenant={alice.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<title>Dashboard | Responses gateway</title>" in html
    assert ">MCP servers</a>" in html and ">Responses</a>" in html
    data = page.context["data"]
    assert [entry["link"] for entry in data.errors] == [
        "/admin/responses_app/storedresponse/?created_from="
        f"{data.window.since:%Y-%m-%d}&error_code=server_error&tenant={alice.pk}"]
    listed = admin_client.get(data.errors[0]["link"]).context["rows"]
    assert [listed_row.id for listed_row in listed] == [failed.id]
    assert admin_client.get("/admin/?window=nonsense&tenant=x").context["data"].totals[
        "responses"] == 2  # the default window (24 hours), every tenant
