"""Database rows of the Conversations API: a tenant's conversations and their ordered items.

The tables keep the names they had when these models lived in responses_app
(`conversations`, `conversation_items`): the move between apps changed Django's state only.
"""
from django.db import models

from responses_app.models import Tenant

MAX_ITEM_ID_LENGTH = 128


class Conversation(models.Model):
    """A conversation of the Conversations API: a tenant's ordered list of items."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="conversations")
    metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "conversations"
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="conversations_tenant_created"),
        ]

    def __str__(self):
        return self.id


class ConversationItem(models.Model):
    """One item of a conversation; the bigserial `seq` is its position."""

    seq = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE,
                                     related_name="items")
    item_id = models.CharField(max_length=MAX_ITEM_ID_LENGTH)
    item = models.JSONField()
    created_at = models.DateTimeField()
    # The response whose input or output this item was (null: added through the items API).
    response_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        db_table = "conversation_items"
        constraints = [
            models.UniqueConstraint(fields=["conversation", "item_id"],
                                    name="conversation_items_unique_id"),
        ]
        # An `item_reference` from outside the conversation finds its item by id.
        indexes = [models.Index(fields=["item_id"], name="conversation_items_item_id")]

    def __str__(self):
        return self.item_id
