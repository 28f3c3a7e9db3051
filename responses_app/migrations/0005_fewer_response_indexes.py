"""Two indexes of `responses` that nothing reads, and that every INSERT and every
non-HOT UPDATE of a response (its claim, its result) maintains: the tenant foreign key's
own index (responses_tenant_usage leads with tenant_id) and Postgres's
varchar_pattern_ops index of the primary key (for LIKE 'prefix%' on ids, which no query
does)."""
import django.db.models.deletion
from django.db import migrations, models

# Django names it after the table and column; only Postgres has it.
LIKE_INDEX = "responses_id_7da8673c_like"


def drop_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {LIKE_INDEX}")


def create_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {LIKE_INDEX} ON responses (id varchar_pattern_ops)")


class Migration(migrations.Migration):

    dependencies = [
        ('responses_app', '0004_admin_browser'),
    ]

    operations = [
        migrations.AlterField(
            model_name='storedresponse',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='responses_app.tenant'),
        ),
        migrations.RunPython(drop_like_index, create_like_index),
    ]
