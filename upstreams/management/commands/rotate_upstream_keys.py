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


class Command(BaseCommand):
    help = "Re-encrypt the stored upstream API keys with the first key of ENCRYPTION_KEYS."

    def handle(self, *args, **options):
        rotated, unreadable = 0, []
        with transaction.atomic():
            for route in UpstreamRoute.objects.select_for_update().exclude(api_key_encrypted=""):
                try:
                    route.api_key_encrypted = reencrypt(route.api_key_encrypted)
                except SecretUnreadable:
                    unreadable.append(route.name)
                    continue
                route.save(update_fields=["api_key_encrypted"])
                rotated += 1
            for server in McpServer.objects.select_for_update().exclude(sealed_headers=""):
                try:
                    server.sealed_headers = reencrypt(server.sealed_headers)
                except SecretUnreadable:
                    unreadable.append(f"MCP server {server.label}")
                    continue
                server.save(update_fields=["sealed_headers"])
                rotated += 1
            for backend in WebSearchBackend.objects.select_for_update().exclude(
                    api_key_encrypted=""):
                try:
                    backend.api_key_encrypted = reencrypt(backend.api_key_encrypted)
                except SecretUnreadable:
                    unreadable.append(f"web search backend {backend.name}")
                    continue
                backend.save(update_fields=["api_key_encrypted"])
                rotated += 1
        self.stdout.write(f"Re-encrypted {rotated} secret(s).")
        if unreadable:
            names = ", ".join(unreadable)
            raise CommandError(f"No key in ENCRYPTION_KEYS opens the key of: {names} "
                               "(the others were re-encrypted).")
