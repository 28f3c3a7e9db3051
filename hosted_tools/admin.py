"""Admin for web search backends. The API key is write-only: the form never shows it, a blank
field keeps the stored key, and "clear API key" removes it. A URL the egress guard would
refuse whatever its name resolves to (a literal private address outside
WEB_SEARCH_EGRESS_ALLOWLIST) is refused here already."""
from django import forms
from django.conf import settings
from django.contrib import admin

from mcp_tools.egress import EgressRefused, check_literal_url, parse_allowlist

from .checks import KEYED
from .models import WebSearchBackend


class WebSearchBackendForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Write-only: stored encrypted and never shown. Leave blank to keep the "
                  "current key. Brave: the subscription token; Tavily: the API key "
                  "(tvly-…); SearXNG: optional, sent as a bearer token.")
    clear_api_key = forms.BooleanField(required=False, label="Clear API key")

    class Meta:
        model = WebSearchBackend
        fields = ["name", "tenant", "kind", "url", "api_key", "clear_api_key",
                  "timeout_seconds", "enabled"]

    def clean_url(self):
        url = self.cleaned_data["url"].strip()
        if not url:
            return url
        try:
            check_literal_url(url, parse_allowlist(settings.WEB_SEARCH_EGRESS_ALLOWLIST))
        except EgressRefused as refused:
            raise forms.ValidationError(f"The egress guard refuses this URL: {refused}.") \
                from None
        return url

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        if kind == "searxng" and data.get("url") == "":  # (None: the URL was refused)
            self.add_error("url", "SearXNG needs the instance's base URL.")
        keeps_key = bool(self.instance.api_key_encrypted) and not data.get("clear_api_key")
        if kind in KEYED and not (data.get("api_key") or keeps_key):
            self.add_error("api_key", f"This backend needs {KEYED[kind]}.")
        return data

    def save(self, commit=True):
        backend = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            backend.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            backend.set_api_key(self.cleaned_data["api_key"])
        if commit:
            backend.save()
        return backend


@admin.register(WebSearchBackend)
class WebSearchBackendAdmin(admin.ModelAdmin):
    form = WebSearchBackendForm
    list_display = ("name", "tenant", "kind", "url", "has_api_key", "enabled", "updated_at")
    list_filter = ("kind", "enabled", "tenant")
    search_fields = ("name", "url")

    @admin.display(boolean=True, description="API key")
    def has_api_key(self, backend):
        return bool(backend.api_key_encrypted)
