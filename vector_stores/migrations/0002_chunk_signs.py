# Written by hand: the chunks' sign bits (vector_stores/sign_bits.py), backfilled in SQL for
# the chunks stored before (pgvector 0.6.2 has no binary_quantize: the embedding read as
# real[]), and their covering index. IF NOT EXISTS: a database where they were made by hand
# (the bench's) migrates without redoing them. The backfill rewrites every chunk row (and
# inserts it again in the HNSW index): ~5 minutes for 100,000 chunks on a 2-core machine.

from django.db import migrations, models

import vector_stores.sign_bits

BACKFILL = """
UPDATE vector_store_chunks SET signs = (
    SELECT string_agg(CASE WHEN value > 0 THEN '1' ELSE '0' END, '' ORDER BY n)
    FROM unnest(embedding::real[]) WITH ORDINALITY AS coordinates(value, n))::bit varying
WHERE signs IS NULL
"""


class Migration(migrations.Migration):

    dependencies = [
        ('vector_stores', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE vector_store_chunks ADD COLUMN IF NOT EXISTS signs bit varying",
                    "ALTER TABLE vector_store_chunks DROP COLUMN IF EXISTS signs"),
                migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
                migrations.RunSQL(
                    "CREATE INDEX IF NOT EXISTS vector_store_chunks_signs "
                    "ON vector_store_chunks (store_file_id) INCLUDE (id, signs)",
                    "DROP INDEX IF EXISTS vector_store_chunks_signs"),
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
