"""What the history read (history.py) needs of each response, kept by Postgres as stored
generated columns, so no code sets them and no write path can leave them stale:
- `output_text`: its output items as JSON text (`resource->'output'`, `[]` when it has
  none), returned verbatim: turning the jsonb into text on every continued chain was most
  of Postgres's part of the read (and reading `resource->'output'` detoasts the whole
  response object, instructions and tools included);
- `input_compaction`, `output_compaction`: its input or its output holds a compaction item
  (where a compacted chain's walk stops), so the walk reads no JSON. Two columns: the
  input's is computed once, by the INSERT; the output's by the writes of `resource`.

Measured (Postgres execution time of the three hot statements of a typical response,
EXPLAIN ANALYZE, 300 each, medians): insert 30 -> 42 us, claim 48 -> 53 us, store with
usage 103 -> 136 us; the read of a 1,000-turn chain about 2.5 ms less. The input items
are not copied: a text copy of `input_items` doubled the INSERT's cost for a 100 KB input
(2.0 -> 4.5 ms) for about 1 ms less per 1,000 turns read.

Not model fields: the ORM's reads of a response never load them. Adding them rewrites the
table once (existing rows get theirs); reversible."""
from django.db import migrations

# As history.py reads them (repeated: a migration does not change with the code).
ADD_SQL = """
ALTER TABLE responses
  ADD COLUMN output_text text
      GENERATED ALWAYS AS (coalesce(nullif(resource->'output', 'null'), '[]')::text) STORED,
  ADD COLUMN input_compaction boolean
      GENERATED ALWAYS AS (input_items @> '[{"type": "compaction"}]') STORED,
  ADD COLUMN output_compaction boolean
      GENERATED ALWAYS AS (coalesce(resource->'output' @> '[{"type": "compaction"}]', false))
      STORED
"""
DROP_SQL = ("ALTER TABLE responses DROP COLUMN output_text, DROP COLUMN input_compaction, "
            "DROP COLUMN output_compaction")


class Migration(migrations.Migration):

    dependencies = [
        ("responses_app", "0007_item_reference_indexes"),
    ]

    operations = [migrations.RunSQL(ADD_SQL, DROP_SQL)]
