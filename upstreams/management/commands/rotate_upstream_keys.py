"""`manage.py rotate_upstream_keys`: re-encrypt every stored secret (upstream keys,
registered MCP servers' credentials, web search backends' keys) under the first key of
ENCRYPTION_KEYS (run it after putting a new key first; then drop the old one)."""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

# runs up a floor: one command re-encrypts every secret sealed under ENCRYPTION_KEYS,
# the MCP servers' credentials and the search backends' keys as well as the upstreams' keys
from hosted_tools.models import WebSearchBackend
from mcp_tools.models import McpServer
from upstreams.models import UpstreamRoute
from upstreams.secrets import SecretUnreadable, reencrypt


# Each model's sealed field, and how a row that no key opens is named.
SEALED = [
    (UpstreamRoute, "api_key_encrypted", lambda route: route.name),
    (McpServer, "sealed_headers", lambda server: f"MCP server {server.label}"),
    (WebSearchBackend, "api_key_encrypted", lambda backend: f"web search backend {backend.name}"),
]


class Command(BaseCommand):
    help = "Re-encrypt the stored upstream API keys with the first key of ENCRYPTION_KEYS."

    def handle(self, *args, **options):
        rotated, unreadable = 0, []
        with transaction.atomic():
            for model, field, named in SEALED:
                for row in model.objects.select_for_update().exclude(**{field: ""}):
                    try:
                        setattr(row, field, reencrypt(getattr(row, field)))
                    except SecretUnreadable:
                        unreadable.append(named(row))
                        continue
                    row.save(update_fields=[field])
                    rotated += 1
        self.stdout.write(f"Re-encrypted {rotated} secret(s).")
        if unreadable:
            names = ", ".join(unreadable)
            raise CommandError(f"No key in ENCRYPTION_KEYS opens the key of: {names} "
                               "(the others were re-encrypted).")
