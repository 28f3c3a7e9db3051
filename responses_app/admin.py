"""Django admin registrations (a fuller response browser is planned)."""
from django.contrib import admin

from .models import ApiKey, StoredResponse, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("__str__", "tenant", "name", "created_at", "last_used_at", "revoked_at")
    list_filter = ("tenant",)
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at")


@admin.register(StoredResponse)
class StoredResponseAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "status", "model", "created_at", "error_code")
    list_filter = ("status", "tenant", "background")
    search_fields = ("id",)
    readonly_fields = [f.name for f in StoredResponse._meta.fields]
    list_select_related = ("tenant",)


from . import admin_conversations  # noqa: F401  (registers Conversation)
