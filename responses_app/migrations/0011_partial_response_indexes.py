"""Two indexes of `responses` made partial, so that most rows' writes skip them: every
INSERT of a response and every UPDATE of it that is not HOT (its result's: it changes
`status` and `resource`, both read by responses_item_ids) adds an entry to each index whose
condition the new row version meets.

- responses_previous -> responses_continuing: only responses that continue another (the
  admin timeline's `previous_response_id = …`, whose `=` implies IS NOT NULL); a chain's
  first turn, and every response without a chain, is in no such index.
- responses_status_created -> responses_not_completed: only rows whose status is not
  `completed` (queued and in-progress runs, for the watchdog and the dashboard's now; the
  failed, incomplete and cancelled ones, for the browser's status filter). A completed
  result's row version is not in it; `status = 'completed'` reads responses_created (nearly
  every row is one).

Measured (2026-11-28, bench/README.md "Issue 31, Postgres's part of a response"): with the
two unused accounting indexes (accounting 0002), 13 index insertions instead of 18 per
stored response (a chain's first turn; 15 instead of 18 for a continuation), its claim's
and store's WAL 9.28-9.29 -> 8.79-8.84 KB, their Postgres CPU 0.92-0.96x (three runs).

Not atomic: each index is built CONCURRENTLY before the one it replaces is dropped
CONCURRENTLY, so a large table keeps taking writes and reads meanwhile. If a build fails
(a deadlock, a cancel) it leaves an INVALID index that IF NOT EXISTS would keep: drop it
(`DROP INDEX CONCURRENTLY responses_continuing;`) and migrate again.
"""
from django.db import migrations, models

CONTINUING = ('CREATE INDEX CONCURRENTLY IF NOT EXISTS "responses_continuing" ON "responses" '
              '("previous_response_id") WHERE "previous_response_id" IS NOT NULL')
NOT_COMPLETED = ('CREATE INDEX CONCURRENTLY IF NOT EXISTS "responses_not_completed" ON '
                 '"responses" ("status", "created_at") WHERE NOT ("status" = \'completed\')')
PREVIOUS = ('CREATE INDEX CONCURRENTLY IF NOT EXISTS "responses_previous" ON "responses" '
            '("previous_response_id")')
STATUS_CREATED = ('CREATE INDEX CONCURRENTLY IF NOT EXISTS "responses_status_created" ON '
                  '"responses" ("status", "created_at")')


def drop(name: str) -> str:
    return f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('responses_app', '0010_upstream_replica'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(CONTINUING, drop("responses_continuing")),
                migrations.RunSQL(drop("responses_previous"), PREVIOUS),
                migrations.RunSQL(NOT_COMPLETED, drop("responses_not_completed")),
                migrations.RunSQL(drop("responses_status_created"), STATUS_CREATED),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name='storedresponse', name='responses_previous'),
                migrations.RemoveIndex(model_name='storedresponse',
                                       name='responses_status_created'),
                migrations.AddIndex(
                    model_name='storedresponse',
                    index=models.Index(condition=models.Q(('previous_response_id__isnull',
                                                           False)),
                                       fields=['previous_response_id'],
                                       name='responses_continuing'),
                ),
                migrations.AddIndex(
                    model_name='storedresponse',
                    index=models.Index(condition=models.Q(('status', 'completed'),
                                                          _negated=True),
                                       fields=['status', 'created_at'],
                                       name='responses_not_completed'),
                ),
            ],
        ),
    ]
