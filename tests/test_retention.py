"""Retention: the prune service deletes exactly the stored responses older than
RESPONSE_RETENTION_DAYS and their Redis event streams, in bounded batches (real Postgres,
real Redis; the service is called directly, as the beat-scheduled task does)."""
from datetime import datetime, timedelta, timezone

import pytest
import redis

from responses_app import retention
from responses_app.bus import event_bus
from responses_app.models import StoredResponse, Tenant
from tests.servers import REDIS_BASE_URL, SPARE_REDIS_DB

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
REDIS_URL = f"{REDIS_BASE_URL}/{SPARE_REDIS_DB}"


@pytest.fixture
def events(settings):
    """The Redis event bus of the production path, on the suite's spare Redis database."""
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    settings.REDIS_URL = REDIS_URL
    settings.EMBEDDED = False
    settings.RESPONSE_RETENTION_DAYS = 30
    event_bus.cache_clear()
    yield client
    event_bus.cache_clear()


def stored(tenant, name, age, events):
    """A stored response created `age` before NOW, with an event stream."""
    response_id = f"resp_{name}"
    StoredResponse.objects.create(
        id=response_id, tenant=tenant, status="completed", model="m",
        created_at=NOW - age, request={}, input_items=[], resource={})
    events.xadd(f"gw:events:{response_id}", {"f": 0, "d": b"x"}, id="1-0")
    return response_id


def left(events):
    rows = sorted(StoredResponse.objects.values_list("id", flat=True))
    streams = sorted(key.decode().removeprefix("gw:events:") for key in events.keys("gw:events:*"))
    return rows, streams


def test_it_prunes_exactly_the_old_responses_and_their_streams(events):
    alice, bob = Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")
    stored(alice, "old", timedelta(days=30, seconds=1), events)
    stored(bob, "older", timedelta(days=400), events)
    stored(alice, "edge", timedelta(days=30), events)
    stored(alice, "young", timedelta(days=29), events)
    stored(bob, "new", timedelta(0), events)

    assert retention.responses_prune(now=NOW) == 2

    kept = ["resp_edge", "resp_new", "resp_young"]
    assert left(events) == (kept, kept)


def test_each_run_deletes_a_bounded_number_of_batches(events, monkeypatch):
    monkeypatch.setattr(retention, "PRUNE_BATCH_SIZE", 2)
    monkeypatch.setattr(retention, "PRUNE_MAX_BATCHES", 2)
    tenant = Tenant.objects.create(name="alice")
    for n in range(5):
        stored(tenant, f"old{n}", timedelta(days=31 + n), events)
    stored(tenant, "new", timedelta(days=1), events)

    assert retention.responses_prune(now=NOW) == 4
    assert len(left(events)[0]) == 2
    assert retention.responses_prune(now=NOW) == 1
    assert left(events) == (["resp_new"], ["resp_new"])
    assert retention.responses_prune(now=NOW) == 0


def test_zero_days_keeps_everything(events, settings):
    settings.RESPONSE_RETENTION_DAYS = 0
    tenant = Tenant.objects.create(name="alice")
    stored(tenant, "ancient", timedelta(days=4000), events)

    assert retention.responses_prune(now=NOW) == 0
    assert left(events) == (["resp_ancient"], ["resp_ancient"])


def test_beat_schedules_the_registered_prune_task():
    from django.conf import settings

    from gateway.celery import app

    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["prune-responses"]
    assert app.tasks[entry["task"]].name == "responses_app.prune_responses"
    assert entry["schedule"] == settings.RETENTION_PRUNE_INTERVAL_SECONDS
