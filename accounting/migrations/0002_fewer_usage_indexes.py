"""Two indexes of `accounting_responseusage` that nothing reads, and that the statement
storing each response's result (its usage row is part of it) maintains: the tenant foreign
key's own index (usage_tenant_recorded leads with tenant_id: the admin's tenant filter and a
tenant's deletion read that one) and Postgres's varchar_pattern_ops index of response_id
(for LIKE 'prefix%', which no query does: the admin's search is a case-insensitive
`%…%`, which no index serves). As responses_app 0005 did for `responses`; measured with
responses_app 0011 (its docstring).

Not atomic: each index is dropped CONCURRENTLY (no lock that holds off the writes while a
long read of the table finishes); the reverse builds them CONCURRENTLY.
"""
import django.db.models.deletion
from django.db import migrations, models

# Django names them after the table and column (the same on every database).
TENANT_INDEX = "accounting_responseusage_tenant_id_9255bb6e"
LIKE_INDEX = "accounting_responseusage_response_id_d0b8e2e8_like"


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('accounting', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX CONCURRENTLY IF EXISTS "{TENANT_INDEX}"',
                    f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{TENANT_INDEX}" '
                    'ON "accounting_responseusage" ("tenant_id")'),
                migrations.RunSQL(
                    f'DROP INDEX CONCURRENTLY IF EXISTS "{LIKE_INDEX}"',
                    f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{LIKE_INDEX}" '
                    'ON "accounting_responseusage" ("response_id" varchar_pattern_ops)'),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='responseusage',
                    name='tenant',
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name='response_usage',
                                            to='responses_app.tenant'),
                ),
            ],
        ),
    ]
