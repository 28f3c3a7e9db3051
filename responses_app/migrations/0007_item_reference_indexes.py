"""The index of `item_reference` lookups by item id (item_references.py): a GIN index over
the ids of each stored response's input items and output items (an expression index: the
write paths are unchanged). Only finished stored rows are in it: a store=false row never,
and a row enters it with its result (its INSERT and its claim do not maintain it). The
conversation items' index is conversations 0002.

Built CONCURRENTLY (the migration is not atomic), so an existing large table keeps taking
writes meanwhile. If the build fails, Postgres leaves an INVALID index: drop it before
migrating again."""
from django.db import migrations

ITEM_IDS_INDEX = "responses_item_ids"
ITEM_IDS_STATISTICS = "responses_item_ids_stats"
# As item_references.ITEM_IDS_EXPRESSION and FINISHED_STORED (repeated: a migration does
# not change with the code).
ITEM_IDS_EXPRESSION = ("(jsonb_path_query_array(input_items, '$[*].id') || "
                       "jsonb_path_query_array(resource, '$.output[*].id'))")
ITEM_IDS_SQL = (
    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {ITEM_IDS_INDEX} ON responses USING gin "
    f"({ITEM_IDS_EXPRESSION} jsonb_path_ops) WITH (fastupdate = off) "
    "WHERE store AND status NOT IN ('queued', 'in_progress')")
# The planner's estimate of how many rows hold an id: without it, it assumes hundreds
# and, for one row wanted, prefers a scan to the index.
ITEM_IDS_STATISTICS_SQL = (f"CREATE STATISTICS IF NOT EXISTS {ITEM_IDS_STATISTICS} "
                           f"ON ({ITEM_IDS_EXPRESSION}) FROM responses")


def create_index(apps, schema_editor):
    schema_editor.execute(ITEM_IDS_SQL)
    schema_editor.execute(ITEM_IDS_STATISTICS_SQL)
    schema_editor.execute("ANALYZE responses")


def drop_index(apps, schema_editor):
    schema_editor.execute(f"DROP STATISTICS IF EXISTS {ITEM_IDS_STATISTICS}")
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {ITEM_IDS_INDEX}")


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ("responses_app", "0006_conversations_app"),
    ]

    operations = [migrations.RunPython(create_index, drop_index)]
