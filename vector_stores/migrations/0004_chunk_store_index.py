# Written by hand: the chunks' foreign key to their store loses Django's two indexes of it
# (`store_id`, and its `varchar_pattern_ops` twin for LIKE prefixes, which no query makes):
# `vector_store_chunks_file` (store_id, store_file_id) leads with the same column, the same
# size (760 against 752 kB on 100,000 chunks: both deduplicated), and is what every read by
# store takes without them (EXPLAIN on the bench's 100,000 chunks: search with and without
# a filter, the deletion cascades, the admin's list: the same plans either way). Every chunk
# insert (ingestion) wrote both: 226 of its 588 bytes of B-tree WAL (bench/README.md,
# "Duplicate indexes of the chunks").
#
# The foreign key's other index, `store_file_id`'s, stays although the covering
# `vector_store_chunks_signs` leads with its column: the filtered text ranking's bitmap of a
# filter's chunks reads it in half the pages (it is deduplicated; the covering one cannot
# be), 0.84-0.95x slower without it (measured, bench/README.md).
#
# Not atomic, the indexes dropped CONCURRENTLY (a plain DROP INDEX waits for, and then
# blocks, every read and write of the table). IF EXISTS: Django names them from the table
# and column, the same on every database 0001 made.

from django.db import migrations, models
import django.db.models.deletion

STORE = "vector_store_chunks_store_id_56b1a156"
STORE_LIKE = "vector_store_chunks_store_id_56b1a156_like"


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('vector_stores', '0003_chunk_unsigned'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX CONCURRENTLY IF EXISTS "{STORE_LIKE}"',
                    f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{STORE_LIKE}" ON '
                    f'"vector_store_chunks" ("store_id" varchar_pattern_ops)'),
                migrations.RunSQL(
                    f'DROP INDEX CONCURRENTLY IF EXISTS "{STORE}"',
                    f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{STORE}" ON '
                    f'"vector_store_chunks" ("store_id")'),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='chunk',
                    name='store',
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name='chunks',
                                            to='vector_stores.vectorstore'),
                ),
            ],
        ),
    ]
