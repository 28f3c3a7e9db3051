# Written by hand: a partial index of the chunks whose sign bits are not yet written
# (`signs IS NULL`: those stored before migration 0002, until the periodic backfill signs
# them; vector_stores/sign_backfill.py). The backfill takes its batches from it in order,
# and a filtered search finds a scope's unsigned chunks by it (sign_bits.signs_statement);
# once they are all signed it is empty, so both cost a probe of an empty index.
#
# Not atomic, built CONCURRENTLY (writes go on during the build, which reads every row on an
# upgraded deployment). A failed build leaves an INVALID index: `DROP INDEX CONCURRENTLY
# vector_store_chunks_unsigned;` and migrate again.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('vector_stores', '0002_chunk_signs'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='chunk',
            index=models.Index(condition=models.Q(('signs__isnull', True)),
                               fields=['store_file', 'id'],
                               name='vector_store_chunks_unsigned'),
        ),
    ]
