"""Conversation and ConversationItem now belong to the `conversations` app (its 0001 took
them into its state): drop them from this app's state. Nothing happens in the database."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("responses_app", "0005_fewer_response_indexes"),
        ("conversations", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name="ConversationItem"),
            migrations.DeleteModel(name="Conversation"),
        ]),
    ]
