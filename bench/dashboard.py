"""The dashboard on 1,000,000 stored responses, in process on a real Postgres: each of its
statements timed and EXPLAINed, and the whole page (the admin's index, through Django's
test client, logged in) for each window, of all tenants and of one; the bar: ≤ 300 ms.

    .venv/bin/python -m bench.dashboard [--rows N] [--rounds N]

The rows (generate_series, one INSERT) are spread evenly over the last 30 days: the 30-day
window holds all of them, the last 24 hours ~33,000, the last hour ~1,400; 20 tenants,
8 models; 2% failed (3 error codes), 1% incomplete, 0.5% cancelled, 20 in progress.
Creates the database `gateway_bench_dashboard` (or `$BENCH_DASHBOARD_DB_NAME`), drops it
after. Also times the 30-day statements on the raw rows (what the page would run without
the rollups), in rounds alternating with the page.
"""
import argparse
import os
import statistics
import time
from datetime import datetime, timezone

from tests.servers import drop_postgres_database, fresh_postgres_database

DB_NAME = os.environ.get("BENCH_DASHBOARD_DB_NAME", "gateway_bench_dashboard")
TENANTS = 20
FILL_SQL = """
INSERT INTO responses (id, tenant_id, status, model, store, background, previous_response_id,
                       created_at, completed_at, first_delta_at, error_code, request,
                       input_items, resource, input_tokens, output_tokens)
SELECT 'resp_' || lpad(to_hex(i), 48, '0'), %(first_tenant)s + i %% %(tenants)s,
       CASE WHEN i <= 20 THEN 'in_progress' WHEN i %% 50 = 0 THEN 'failed'
            WHEN i %% 97 = 0 THEN 'incomplete' WHEN i %% 199 = 0 THEN 'cancelled'
            ELSE 'completed' END,
       'model-' || (i %% 8), true, false, NULL, t.created,
       CASE WHEN i > 20 AND i %% 50 <> 0 AND i %% 97 <> 0 AND i %% 199 <> 0
            THEN t.created + make_interval(secs => 0.4 + (i %% 1000) / 250.0) END,
       CASE WHEN i %% 199 <> 0
            THEN t.created + make_interval(secs => 0.05 + (i %% 700) / 1000.0) END,
       CASE WHEN i > 20 AND i %% 50 = 0 THEN (ARRAY['server_error', 'rate_limit_exceeded',
                                                     'context_length_exceeded'])[1 + i %% 3] END,
       '{"instructions": null, "params": {}, "include": []}'::jsonb,
       jsonb_build_array(jsonb_build_object('type', 'message', 'role', 'user', 'content',
           jsonb_build_array(jsonb_build_object(
               'type', 'input_text', 'text', 'question ' || i || repeat(' words', 40))))),
       jsonb_build_object('status', 'completed', 'output', jsonb_build_array(
           jsonb_build_object('type', 'message', 'content', jsonb_build_array(
               jsonb_build_object('type', 'output_text', 'text', repeat('answer ', 60)))))),
       100 + i %% 1000, 20 + i %% 300
  FROM generate_series(1, %(rows)s) AS i,
       LATERAL (SELECT now() - make_interval(secs => i * (30 * 86400.0 / %(rows)s))) AS t(created)
"""


def _setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _fill(rows: int) -> list[int]:
    from django.db import connection

    from responses_app.models import Tenant

    tenants = Tenant.objects.bulk_create([Tenant(name=f"tenant-{n:02d}")
                                          for n in range(TENANTS)])
    ids = sorted(tenant.pk for tenant in tenants)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(FILL_SQL, {"rows": rows, "tenants": TENANTS, "first_tenant": ids[0]})
        cursor.execute("VACUUM ANALYZE responses")
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('responses'))")
        size, = cursor.fetchone()
    print(f"filled {rows:,} responses in {time.perf_counter() - started:.1f} s "
          f"(table with its indexes and TOAST: {size})")
    return ids


def _ms(function, rounds: int) -> tuple[float, float]:
    """(median, max) wall time in ms over `rounds` calls."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def _explain(sql: str, params: dict) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql, params)
        return "\n".join("    " + row[0] for row in cursor.fetchall())


def _statements(now: datetime, tenant_id: int) -> list[tuple[str, str, dict]]:
    """(name, sql, params) of the two statements the page runs, per window and scope."""
    from dashboard import queries
    from dashboard.selectors import _ranges
    from dashboard.windows import window

    found = []
    for name in ("hour", "day", "30d"):
        shown = window(name, now)
        ranges, _ = _ranges(shown)
        for scope, tenant in (("all tenants", None), ("one tenant", tenant_id)):
            params = queries.params(shown.unit, shown.since, now, tenant, **ranges)
            found.append((f"{name}, {scope}: summary", queries.summary_sql(tenant), params))
            found.append((f"{name}, {scope}: latency", queries.page_latency_sql(tenant),
                          params))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    _setup_django(fresh_postgres_database(DB_NAME))
    try:
        run(args.rows, args.rounds)
    finally:
        from django.db import connections

        connections.close_all()
        drop_postgres_database(DB_NAME)


def run(rows: int, rounds: int) -> None:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from dashboard import queries
    from dashboard.selectors import dashboard
    from dashboard.windows import window

    tenant_ids = _fill(rows)
    one = tenant_ids[3]
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(User.objects.create_superuser("bench", "bench@example.org", "x"))
    now = datetime.now(timezone.utc)

    def page(query: str):
        response = client.get("/admin/" + query)
        assert response.status_code == 200, response.status_code

    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    for query, what in (("?window=day", "closed hours"),
                        ("?window=30d", "closed days, and today's closed hours")):
        started = time.perf_counter()
        page(query)
        print(f"first {query} (rolls up its {what} once): "
              f"{(time.perf_counter() - started) * 1000:.0f} ms")

    print(f"\nthe page's statements (median / max of {rounds}, ms):")
    for name, sql, params in _statements(now, one):
        with connection.cursor() as cursor:
            median, worst = _ms(lambda: cursor.execute(sql, params) or cursor.fetchall(),
                                rounds)
        print(f"  {name:<34} {median:7.1f} / {worst:7.1f}")
    for name in ("day", "30d"):
        rolled = lambda n=name: dashboard(window(n, datetime.now(timezone.utc)))  # noqa: E731
        median, worst = _ms(rolled, rounds)
        print(f"  {name + ' selectors (rollups + the rest)':<34} {median:7.1f} / {worst:7.1f}")

    print(f"\nwhole page, GET /admin/… (median / max of {rounds}, ms; the bar: 300):")
    for query in ("?window=hour", "?window=day", "?window=30d",
                  f"?window=hour&tenant={one}", f"?window=day&tenant={one}",
                  f"?window=30d&tenant={one}"):
        median, worst = _ms(lambda q=query: page(q), rounds)
        print(f"  {query:<28} {median:7.1f} / {worst:7.1f}")

    print("\nthe two statements on every row of the window (without rollups) vs the whole page "
          "(alternating rounds, ms):")
    for name in ("day", "30d"):
        shown = window(name, now)
        params = queries.params(shown.unit, shown.since, now, None)
        raw, with_rollups = [], []
        for round_ in range(4):
            order = [("raw", raw), ("rolled", with_rollups)]
            for kind, times in (order if round_ % 2 == 0 else order[::-1]):
                started = time.perf_counter()
                if kind == "raw":
                    queries.fetch(queries.counts_sql(None), params)
                    queries.fetch(queries.latency_sql(None), params)
                else:
                    page(f"?window={name}")
                times.append((time.perf_counter() - started) * 1000)
        print(f"  {name}: raw statements {' '.join(f'{t:.0f}' for t in raw)}; "
              f"page {' '.join(f'{t:.0f}' for t in with_rollups)}; "
              f"ratio of medians {statistics.median(raw) / statistics.median(with_rollups):.1f}x")
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")

    print("\nEXPLAIN ANALYZE of each statement:")
    for name, sql, params in _statements(now, one):
        print(f"\n  {name}\n{_explain(sql, params)}")


if __name__ == "__main__":
    main()
