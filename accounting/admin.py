"""Admin: tenant limit overrides (editable), usage per response and per day (read-only)."""
from django.contrib import admin

from .models import DailyUsage, ResponseUsage, TenantLimits


@admin.register(TenantLimits)
class TenantLimitsAdmin(admin.ModelAdmin):
    list_display = ("tenant", "requests_per_minute", "tokens_per_minute", "concurrent_runs",
                    "monthly_token_budget")
    search_fields = ("tenant__name",)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ResponseUsage)
class ResponseUsageAdmin(ReadOnlyAdmin):
    list_display = ("response_id", "tenant", "model", "status", "input_tokens", "output_tokens",
                    "reasoning_tokens", "recorded_at")
    list_filter = ("tenant", "model")
    search_fields = ("response_id",)
    list_select_related = ("tenant",)


@admin.register(DailyUsage)
class DailyUsageAdmin(ReadOnlyAdmin):
    list_display = ("day", "tenant", "model", "requests", "input_tokens", "output_tokens",
                    "reasoning_tokens")
    list_filter = ("tenant", "model")
    date_hierarchy = "day"
    list_select_related = ("tenant",)
