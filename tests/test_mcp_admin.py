"""Registered MCP servers: credentials sealed at rest (rotatable keys), write-only in the
admin (never rendered back), and a request naming a label another tenant registered is
refused like an unknown one."""
import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import User

from mcp_tools.models import McpServer
from responses_app.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "Bearer very-secret-token"


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    return client


def test_the_admin_seals_credentials_and_never_shows_them(admin_client):
    tenant = Tenant.objects.create(name="alice")
    response = admin_client.post("/admin/mcp_tools/mcpserver/add/", {
        "tenant": tenant.id, "label": "docs", "url": "https://mcp.example/mcp",
        "transport": "streamable_http", "description": "",
        "new_headers": f'{{"Authorization": "{SECRET}"}}'})
    assert response.status_code == 302
    server = McpServer.objects.get(label="docs")
    assert "very-secret" not in server.sealed_headers
    assert server.headers() == {"Authorization": SECRET}
    page = admin_client.get(f"/admin/mcp_tools/mcpserver/{server.id}/change/")
    assert page.status_code == 200
    assert "very-secret" not in page.content.decode()
    assert server.sealed_headers not in page.content.decode()
    # saving without new credentials keeps them; "remove" removes them
    admin_client.post(f"/admin/mcp_tools/mcpserver/{server.id}/change/", {
        "tenant": tenant.id, "label": "docs", "url": "https://mcp.example/mcp",
        "transport": "sse", "description": "d", "new_headers": ""})
    server.refresh_from_db()
    assert (server.transport, server.headers()) == ("sse", {"Authorization": SECRET})
    admin_client.post(f"/admin/mcp_tools/mcpserver/{server.id}/change/", {
        "tenant": tenant.id, "label": "docs", "url": "https://mcp.example/mcp",
        "transport": "sse", "description": "d", "new_headers": "", "clear_headers": "on"})
    server.refresh_from_db()
    assert server.headers() == {}


def test_keys_rotate(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [old]
    server = McpServer(tenant=Tenant.objects.create(name="bob"), label="x",
                       url="https://mcp.example/mcp")
    server.set_headers({"Authorization": SECRET})
    settings.ENCRYPTION_KEYS = [new, old]
    assert server.headers() == {"Authorization": SECRET}
    settings.ENCRYPTION_KEYS = [new]
    assert server.headers() == {}


def test_another_tenants_server_is_unknown():
    from mcp_tools.services import mcp_request_prepare
    from responses_app.create.request import parse_create_request
    from responses_app.errors import InvalidRequest

    alice, bob = Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")
    McpServer.objects.create(tenant=alice, label="docs", url="https://mcp.example/mcp")
    create = parse_create_request({"model": "m", "input": "hi",
                                   "tools": [{"type": "mcp", "server_label": "docs"}]})
    mcp_request_prepare(alice, create, "resp_a")
    with pytest.raises(InvalidRequest, match="no server is registered under that label"):
        mcp_request_prepare(bob, create, "resp_b")
