"""Django admin: tenants (with their usage), API keys (minted here, shown once, revoked
here), and stored responses through the response browser (`browser/`)."""
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from .auth import mint_api_key
from .browser import views as browser
from .models import ApiKey, StoredResponse, Tenant


def _revocation_delay() -> str:
    return (f"A process that accepted a key in the last {settings.API_KEY_CACHE_SECONDS:g} "
            "seconds (API_KEY_CACHE_SECONDS) may accept it until then.")


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = ("__str__", "name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at", "links")
    search_fields = ("name",)
    readonly_fields = ("links",)
    inlines = (ApiKeyInline,)

    @admin.display(description="")
    def links(self, tenant):
        if tenant.pk is None:
            return ""
        responses = reverse("admin:responses_app_storedresponse_changelist")
        usage = reverse("admin:responses_app_tenant_usage", args=[tenant.pk])
        return format_html('<a href="{}?tenant={}">responses</a> · <a href="{}">usage</a>',
                           responses, tenant.pk, usage)

    def get_urls(self):
        return [
            path("<int:tenant_id>/usage/",
                 self.admin_site.admin_view(lambda request, tenant_id:
                                            browser.usage_of_tenant(self, request, tenant_id)),
                 name="responses_app_tenant_usage"),
            *super().get_urls(),
        ]


class ApiKeyCreateForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"))
    name = forms.CharField(max_length=200, required=False,
                           help_text="What the key is for (optional).")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("__str__", "tenant", "name", "state", "created_at", "last_used_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "tenant")
    list_select_related = ("tenant",)
    search_fields = ("name", "prefix", "tenant__name")
    fields = ("tenant", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("tenant", "prefix", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    @admin.display(description="state")
    def state(self, key):
        return "revoked" if key.revoked_at else "active"

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke(self, request, queryset):
        revoked = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {revoked} API key(s). {_revocation_delay()}",
                          messages.SUCCESS)

    def add_view(self, request, form_url="", extra_context=None):
        """Mint a key and show it once, on this page: only its hash is stored."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyCreateForm(request.POST or None)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "form": form, "title": "Create an API key"}
        if request.method == "POST" and form.is_valid():
            key = mint_api_key(form.cleaned_data["tenant"], form.cleaned_data["name"])
            context.update(title="API key created", key=key,
                           tenant=form.cleaned_data["tenant"])
            return TemplateResponse(request, "browser/api_key_created.html", context)
        return TemplateResponse(request, "browser/api_key_add.html", context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "subtitle": _revocation_delay()}
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(StoredResponse)
class StoredResponseAdmin(admin.ModelAdmin):
    """Read-only: the list and the detail page are the browser's own views."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        return browser.response_list(self, request)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return browser.response_detail(self, request, unquote(object_id))

    def get_urls(self):
        return [
            path("<path:response_id>/events/",
                 self.admin_site.admin_view(lambda request, response_id:
                                            browser.response_events(self, request,
                                                                    response_id)),
                 name="responses_app_storedresponse_events"),
            *super().get_urls(),
        ]

