"""Admin: a tenant's uploaded files (read-only; the bytes are in the files storage)."""
from django.contrib import admin

from .models import StoredFile


@admin.register(StoredFile)
class StoredFileAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "filename", "purpose", "bytes", "created_at")
    list_filter = ("tenant", "purpose")
    search_fields = ("id", "filename")
    readonly_fields = [field.name for field in StoredFile._meta.fields]

    def has_add_permission(self, request):
        return False
