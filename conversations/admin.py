"""Django admin for conversations: each with its items inline, read-only."""
from django.contrib import admin

from .models import Conversation, ConversationItem


class ConversationItemInline(admin.TabularInline):
    model = ConversationItem
    fields = ("seq", "item_id", "response_id", "created_at", "item")
    readonly_fields = fields
    ordering = ("seq",)
    extra = 0
    can_delete = False
    show_change_link = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("id",)
    readonly_fields = ("id", "tenant", "created_at")
    list_select_related = ("tenant",)
    inlines = (ConversationItemInline,)
