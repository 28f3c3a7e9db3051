"""Stored chat completions (`store: true`): the completion object as the client got it, the
request's messages (for `/messages`), and its metadata (filterable, updatable)."""
from django.db import models

from responses_app.models import Tenant


class StoredChatCompletion(models.Model):
    id = models.CharField(primary_key=True, max_length=64)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    metadata = models.JSONField(default=dict, blank=True)
    request_messages = models.JSONField(default=list)  # the messages as the client sent them
    completion = models.JSONField()  # the `chat.completion` object (its metadata: `metadata`)

    class Meta:
        db_table = "chat_completions"
        indexes = [models.Index(fields=["tenant", "created_at"], name="chat_tenant_created")]
        verbose_name = "stored chat completion"

    def __str__(self):
        return self.id

    def as_object(self) -> dict:
        """The completion as the API shows it (with its current metadata)."""
        return {**self.completion, "metadata": self.metadata}
