"""Admin for upstream routes. The API key is write-only: the form never shows it, a blank
field keeps the stored key, and "clear API key" removes it."""
from django import forms
from django.contrib import admin

from .models import TOKEN_COUNTERS, UpstreamRoute


class UpstreamRouteForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="Write-only: stored encrypted and never shown. Leave blank to keep the "
                  "current key.")
    clear_api_key = forms.BooleanField(required=False, label="Clear API key")
    token_counter = forms.ChoiceField(
        choices=TOKEN_COUNTERS, required=False, initial="estimate",
        help_text="How input tokens are counted (input_tokens, truncation, compaction); "
                  "empty: estimate.")

    class Meta:
        model = UpstreamRoute
        fields = ["name", "model_pattern", "base_url", "replica_urls", "api_key", "clear_api_key",
                  "connect_timeout", "read_timeout", "extra_headers", "max_concurrency",
                  "context_window", "token_counter", "tokenizer_path", "accepts_images",
                  "passthrough_params", "enabled"]

    def clean_token_counter(self):
        return self.cleaned_data.get("token_counter") or "estimate"

    def save(self, commit=True):
        route = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            route.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            route.set_api_key(self.cleaned_data["api_key"])
        if commit:
            route.save()
        return route


@admin.register(UpstreamRoute)
class UpstreamRouteAdmin(admin.ModelAdmin):
    form = UpstreamRouteForm
    list_display = ("name", "model_pattern", "base_url", "has_api_key", "max_concurrency",
                    "enabled", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "model_pattern", "base_url")

    @admin.display(boolean=True, description="API key")
    def has_api_key(self, route):
        return bool(route.api_key_encrypted)
