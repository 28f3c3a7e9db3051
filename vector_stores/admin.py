"""Admin: vector stores per tenant with their files' ingestion state, and a store's chunks
(browsable, filtered by store and file). Read-only: ingestion writes these rows."""
from django.contrib import admin

from .models import Chunk, VectorStore, VectorStoreFile


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class StoreFileInline(admin.TabularInline):
    model = VectorStoreFile
    fields = ("file", "status", "last_error", "attributes", "usage_bytes", "attempts",
              "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(VectorStore)
class VectorStoreAdmin(ReadOnly):
    list_display = ("id", "tenant", "name", "created_at", "last_active_at")
    list_filter = ("tenant",)
    search_fields = ("id", "name")
    inlines = [StoreFileInline]


@admin.register(VectorStoreFile)
class VectorStoreFileAdmin(ReadOnly):
    list_display = ("file", "store", "status", "usage_bytes", "attempts", "created_at")
    list_filter = ("status", "store__tenant")
    search_fields = ("file__id", "file__filename", "store__id")
    list_select_related = ("file", "store")


@admin.register(Chunk)
class ChunkAdmin(ReadOnly):
    list_display = ("id", "store", "store_file", "position", "tokens", "preview")
    list_filter = ("store__tenant",)
    search_fields = ("store__id", "store_file__file__id", "text")
    exclude = ("embedding", "tsv", "signs")
    list_select_related = ("store", "store_file")
    ordering = ("store", "store_file", "position")

    @admin.display(description="text")
    def preview(self, obj):
        return obj.text[:120]
