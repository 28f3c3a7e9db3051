"""Database rows: tenants, their API keys and stored responses.

A stored response keeps only its own input items and its response object (whose `output`
holds its output items); the conversation before it is found by walking
`previous_response_id`, so a chain of n turns stores n turns, not n². A Conversation
(the Conversations API, the `conversations` app) instead holds its items itself, in order.
"""
from django.db import models
from django.db.models import Q


class Tenant(models.Model):
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name


class ApiKey(models.Model):
    """An API key `sk-<prefix>_<secret>`: the prefix is looked up, the secret kept as a hash."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=32, unique=True)
    secret_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self):
        return f"sk-{self.prefix}_…"


class ResponseStatus(models.TextChoices):
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = {
    ResponseStatus.COMPLETED,
    ResponseStatus.INCOMPLETE,
    ResponseStatus.FAILED,
    ResponseStatus.CANCELLED,
}


class StoredResponse(models.Model):
    """One response: the request the worker runs and the response object clients read."""

    id = models.CharField(max_length=64, primary_key=True)
    # No index of its own: responses_tenant_usage leads with it (every row's INSERT and
    # UPDATE maintains every index, three times per response).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="responses",
                               db_index=False)
    status = models.CharField(max_length=16, choices=ResponseStatus.choices)
    model = models.CharField(max_length=200)
    store = models.BooleanField(default=True)
    background = models.BooleanField(default=False)
    previous_response_id = models.CharField(max_length=64, null=True, blank=True)
    # The Conversation this response reads its history from and appends its items to.
    conversation_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    # The worker process running it (set by the claim): the watchdog fails runs whose worker
    # stopped sending heartbeats.
    worker_id = models.CharField(max_length=128, null=True, blank=True)
    # The upstream-facing request: instructions, tools, sampling and output options.
    request = models.JSONField()
    # This response's own input items, normalized, each with an id.
    input_items = models.JSONField()
    # The response object exactly as the last stream event described it.
    resource = models.JSONField()
    # Copied from resource.usage when the run is stored: the admin aggregates them.
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "responses"
        indexes = [
            models.Index(fields=["previous_response_id"], name="responses_previous"),
            models.Index(fields=["status", "created_at"], name="responses_status_created"),
            # The admin's response browser: newest first, alone or by one filter.
            models.Index(fields=["created_at"], name="responses_created"),
            models.Index(fields=["model", "-created_at"], name="responses_model_created"),
            models.Index(fields=["-created_at"], name="responses_error_created",
                         condition=Q(error_code__isnull=False)),
            models.Index(fields=["-created_at"], name="responses_background_created",
                         condition=Q(background=True)),
            # A tenant's responses newest first; its usage by day read from the index alone.
            models.Index(fields=["tenant", "created_at", "status", "model", "input_tokens",
                                 "output_tokens"], name="responses_tenant_usage"),
        ]

    def __str__(self):
        return self.id
