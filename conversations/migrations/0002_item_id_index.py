"""An index of conversation items by item id: an `item_reference` from outside the
conversation finds its item by id (responses_app/item_references.py). Built CONCURRENTLY
(the migration is not atomic), so a large live table keeps taking writes."""
from django.db import migrations, models

INDEX = "conversation_items_item_id"


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ("conversations", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="conversationitem",
                    index=models.Index(fields=["item_id"], name=INDEX),
                ),
            ],
            database_operations=[migrations.RunSQL(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX} "
                "ON conversation_items (item_id)",
                f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")],
        ),
    ]
