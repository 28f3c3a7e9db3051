"""Rows of the MCP tools: servers an admin registered for a tenant, and used approvals.

A registered server's credentials (HTTP headers such as Authorization) are stored sealed
(mcp_tools.secrets) and never shown back: requests name the server by its label alone.
"""
from django.db import models

from responses_app.models import Tenant

from . import secrets


class McpTransport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "SSE (legacy)"


class McpServer(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="mcp_servers")
    label = models.CharField(max_length=64, help_text="The `server_label` requests use.")
    url = models.URLField(max_length=2000)
    transport = models.CharField(max_length=20, choices=McpTransport.choices,
                                 default=McpTransport.STREAMABLE_HTTP)
    description = models.TextField(blank=True, default="")
    sealed_headers = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mcp_servers"
        constraints = [models.UniqueConstraint(fields=["tenant", "label"],
                                               name="mcp_server_unique_label")]

    def __str__(self):
        return f"{self.label} ({self.tenant})"

    def set_headers(self, headers: dict | None) -> None:
        self.sealed_headers = secrets.seal_json(headers) if headers else ""

    def headers(self) -> dict:
        return (secrets.open_json(self.sealed_headers) or {}) if self.sealed_headers else {}


class McpApprovalUse(models.Model):
    """An `mcp_approval_response` that was acted on: each approval request is answered once."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    approval_request_id = models.CharField(max_length=128)
    response_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mcp_approval_uses"
        constraints = [models.UniqueConstraint(fields=["tenant", "approval_request_id"],
                                               name="mcp_approval_used_once")]
