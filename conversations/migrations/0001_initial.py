"""The Conversation and ConversationItem models move here from responses_app: Django's
state only. Their tables (`conversations`, `conversation_items`) were created by
responses_app 0002 and stay as they are, rows included; responses_app 0006 drops the models
from that app's state. Their content types (and so their permissions) are relabelled."""
import django.db.models.deletion
from django.db import migrations, models

MODELS = ("conversation", "conversationitem")


def relabel_content_types(apps, schema_editor, old="responses_app", new="conversations"):
    content_types = apps.get_model("contenttypes", "ContentType").objects.using(
        schema_editor.connection.alias)
    taken = content_types.filter(app_label=new, model__in=MODELS).values_list("model", flat=True)
    (content_types.filter(app_label=old, model__in=MODELS).exclude(model__in=list(taken))
     .update(app_label=new))


def unrelabel_content_types(apps, schema_editor):
    relabel_content_types(apps, schema_editor, old="conversations", new="responses_app")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("responses_app", "0005_fewer_response_indexes"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name="Conversation",
                fields=[
                    ("id", models.CharField(max_length=64, primary_key=True, serialize=False)),
                    ("metadata", models.JSONField(default=dict)),
                    ("created_at", models.DateTimeField()),
                    ("tenant", models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="conversations", to="responses_app.tenant")),
                ],
                options={
                    "db_table": "conversations",
                    "indexes": [models.Index(fields=["tenant", "-created_at"],
                                             name="conversations_tenant_created")],
                },
            ),
            migrations.CreateModel(
                name="ConversationItem",
                fields=[
                    ("seq", models.BigAutoField(primary_key=True, serialize=False)),
                    ("item_id", models.CharField(max_length=128)),
                    ("item", models.JSONField()),
                    ("created_at", models.DateTimeField()),
                    ("response_id", models.CharField(blank=True, max_length=64, null=True)),
                    ("conversation", models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="items",
                        to="conversations.conversation")),
                ],
                options={
                    "db_table": "conversation_items",
                    "constraints": [models.UniqueConstraint(
                        fields=("conversation", "item_id"),
                        name="conversation_items_unique_id")],
                },
            ),
        ]),
        migrations.RunPython(relabel_content_types, unrelabel_content_types),
    ]
