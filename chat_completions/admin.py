"""Stored chat completions in the admin, beside responses: read-only, per tenant."""
import json

from django.contrib import admin
from django.utils.html import format_html

from .models import StoredChatCompletion


@admin.register(StoredChatCompletion)
class StoredChatCompletionAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "model", "created_at", "finish_reason", "total_tokens")
    list_filter = ("tenant", "model")
    search_fields = ("id",)
    ordering = ("-created_at",)
    readonly_fields = ("id", "tenant", "model", "created_at", "metadata", "messages_shown",
                       "completion_shown")
    exclude = ("request_messages", "completion")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="finish reason")
    def finish_reason(self, obj):
        choices = obj.completion.get("choices") or [{}]
        return choices[0].get("finish_reason")

    @admin.display(description="tokens")
    def total_tokens(self, obj):
        return (obj.completion.get("usage") or {}).get("total_tokens")

    @admin.display(description="request messages")
    def messages_shown(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.request_messages, indent=2))

    @admin.display(description="completion")
    def completion_shown(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.completion, indent=2))
