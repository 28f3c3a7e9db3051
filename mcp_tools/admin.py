"""Admin for registered MCP servers: credentials are write-only (sealed, never shown)."""
import json

from django import forms
from django.contrib import admin

from .models import McpServer


class McpServerForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    new_headers = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        label="Credentials (HTTP headers)",
        help_text='A JSON object, e.g. {"Authorization": "Bearer …"}. Stored encrypted and '
                  "never shown; leave empty to keep the current ones.")
    clear_headers = forms.BooleanField(required=False, label="Remove the stored credentials")

    class Meta:
        model = McpServer
        fields = ("tenant", "label", "url", "transport", "description")

    def clean_new_headers(self):
        text = self.cleaned_data["new_headers"].strip()
        if not text:
            return None
        try:
            headers = json.loads(text)
        except ValueError:
            raise forms.ValidationError("Not valid JSON.") from None
        if not isinstance(headers, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            raise forms.ValidationError("Must be an object of string values.")
        return headers

    def save(self, commit=True):
        server = super().save(commit=False)
        if self.cleaned_data.get("clear_headers"):
            server.set_headers(None)
        elif self.cleaned_data.get("new_headers"):
            server.set_headers(self.cleaned_data["new_headers"])
        if commit:
            server.save()
        return server


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = ("label", "tenant", "url", "transport", "has_credentials", "created_at")
    list_filter = ("tenant", "transport")
    search_fields = ("label", "url")

    @admin.display(boolean=True, description="credentials")
    def has_credentials(self, server):
        return bool(server.sealed_headers)
