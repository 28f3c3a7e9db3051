"""Web search backends an administrator configured: one for a tenant, or one for every tenant
(no tenant: the deployment's default). Which one serves a search is decided by
hosted_tools.backend_table (a tenant's own, else the default row, else the WEB_SEARCH_*
settings). The API key is stored encrypted (upstreams.secrets, as upstream routes' keys) and
never shown back.
"""
from django.db import models
from django.db.models import Q

from responses_app.models import Tenant
from upstreams import secrets

from .web_backends import BACKENDS

LABELS = {"searxng": "SearXNG (JSON API)", "brave": "Brave Search API",
          "tavily": "Tavily search API"}
KINDS = [(kind, LABELS[kind]) for kind in BACKENDS]


class WebSearchBackend(models.Model):
    name = models.CharField(max_length=100, unique=True)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE,
        related_name="web_search_backends",
        help_text="Empty: the deployment's default, for every tenant without its own.")
    kind = models.CharField(max_length=20, choices=KINDS)
    url = models.CharField(
        max_length=500, blank=True, default="",
        help_text="The backend's base URL: a SearXNG instance (its /search answers "
                  "format=json); empty for Brave (https://api.search.brave.com/res/v1) or "
                  "Tavily (https://api.tavily.com). Reached through the egress guard: a "
                  "private address only if WEB_SEARCH_EGRESS_ALLOWLIST lets it through.")
    api_key_encrypted = models.TextField(blank=True, default="", editable=False)
    timeout_seconds = models.FloatField(
        null=True, blank=True, help_text="Seconds; empty: WEB_SEARCH_TIMEOUT_SECONDS.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "web_search_backends"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(
            fields=["tenant"], condition=Q(enabled=True), nulls_distinct=False,
            name="web_search_backend_one_enabled_per_tenant",
            violation_error_message="An enabled web search backend already serves this "
                                    "tenant (or, with no tenant, the deployment).")]

    def __str__(self):
        return f"{self.name} ({self.kind}, {self.tenant or 'deployment default'})"

    def set_api_key(self, plaintext: str) -> None:
        self.api_key_encrypted = secrets.encrypt(plaintext) if plaintext else ""

    def api_key(self) -> str:
        return secrets.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""
