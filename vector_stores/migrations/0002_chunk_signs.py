# Written by hand: the chunks' sign bits (vector_stores/sign_bits.py) and their covering
# index. The column only: the chunks stored before are signed afterwards by the periodic
# task (vector_stores/sign_backfill.py, in short batches), not here. Backfilling them here
# (one UPDATE of every row, re-inserting each in the HNSW index) held the table's locks for
# 4 min 46 s per 100,000 chunks on a 2-core machine: hours of `migrate` with search and
# ingestion blocked on a deployment of millions. Until then the unsigned chunks (NULL) are
# re-ranked exactly with the pre-ranked ones (sign_bits.signs_statement): none missed.
#
# Not atomic, the index built CONCURRENTLY: the ALTER is a catalogue change (a nullable
# column without a default rewrites nothing; it waits for the table's lock briefly), and the
# index is built without blocking writes (a plain CREATE INDEX holds off ingestion for the
# whole build, minutes on millions of rows). If the build fails (a deadlock, a cancel) it
# leaves an INVALID index that IF NOT EXISTS would keep: `DROP INDEX CONCURRENTLY
# vector_store_chunks_signs;` and migrate again. IF NOT EXISTS: a database where the column
# and index were made by hand (the bench's), or by this migration's first form (which also
# backfilled), migrates without redoing them.

from django.db import migrations, models

import vector_stores.sign_bits


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('vector_stores', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE vector_store_chunks ADD COLUMN IF NOT EXISTS signs bit varying",
                    "ALTER TABLE vector_store_chunks DROP COLUMN IF EXISTS signs"),
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS vector_store_chunks_signs "
                    "ON vector_store_chunks (store_file_id) INCLUDE (id, signs)",
                    "DROP INDEX CONCURRENTLY IF EXISTS vector_store_chunks_signs"),
            ],
            state_operations=[
                migrations.AddField(
                    model_name='chunk',
                    name='signs',
                    field=vector_stores.sign_bits.SignBitsField(null=True),
                ),
                migrations.AddIndex(
                    model_name='chunk',
                    index=models.Index(fields=['store_file'], include=('id', 'signs'),
                                       name='vector_store_chunks_signs'),
                ),
            ],
        ),
    ]
