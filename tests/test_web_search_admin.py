"""Web search backends configured in the admin: the key write-only (encrypted, never shown
back), a tenant's own backend serving its searches over the deployment's default and the
WEB_SEARCH_* settings, another tenant never using it, one enabled backend per tenant, and the
egress guard refusing a private address (in the form when the URL is a literal address, at
search time when a name resolves to one). Searches go over real HTTP to tests/fake_search.py."""
import asyncio

import pytest
from django.contrib.auth.models import User

from hosted_tools.backend_table import backend_table
from hosted_tools.models import WebSearchBackend
from hosted_tools.web_search import SearchFailed, search_web
from responses_app.models import Tenant
from responses_app.translation.hosted_items import WebResult
from tests.fake_search import PAGES, TAVILY_KEY

pytestmark = pytest.mark.django_db

ADD = "/admin/hosted_tools/websearchbackend/add/"
TOOL = {"type": "web_search", "search_context_size": "low"}


@pytest.fixture
def admin_client(client, settings, fake_search):
    fake_search.clear()
    settings.WEB_SEARCH_BACKEND = ""
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = ["127.0.0.1/32"]
    settings.WEB_SEARCH_BACKENDS_CACHE_SECONDS = 600  # read once per test, on its connection
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    return client


@pytest.fixture
def tenants():
    return Tenant.objects.create(name="alice"), Tenant.objects.create(name="bob")


def form(name, kind, url="", tenant=None, api_key="", **more) -> dict:
    return {"name": name, "kind": kind, "url": url, "tenant": tenant.id if tenant else "",
            "api_key": api_key, "timeout_seconds": "", "enabled": "on", **more}


def search(tenant, query="python 3.14"):
    backend_table()  # read here, on the test's database connection; the search reuses it
    return asyncio.run(search_web(TOOL, query, tenant.id))


def test_the_admin_stores_the_key_encrypted_and_never_shows_it(admin_client, tenants,
                                                                fake_search):
    alice, _ = tenants
    response = admin_client.post(ADD, form("alice-tavily", "tavily", fake_search.tavily_url,
                                           alice, TAVILY_KEY))
    assert response.status_code == 302
    backend = WebSearchBackend.objects.get(name="alice-tavily")
    assert TAVILY_KEY not in backend.api_key_encrypted
    assert backend.api_key() == TAVILY_KEY
    change = f"/admin/hosted_tools/websearchbackend/{backend.id}/change/"
    for page in (admin_client.get(change), admin_client.get(ADD.replace("add/", ""))):
        assert page.status_code == 200
        assert TAVILY_KEY not in page.content.decode()
        assert backend.api_key_encrypted not in page.content.decode()
    assert "alice-tavily" in admin_client.get(ADD.replace("add/", "")).content.decode()
    # saving with the key field blank keeps the key; clearing a key Tavily needs is refused
    admin_client.post(change, form("alice-tavily", "tavily", fake_search.tavily_url, alice,
                                   timeout_seconds="4"))
    backend.refresh_from_db()
    assert (backend.timeout_seconds, backend.api_key()) == (4.0, TAVILY_KEY)
    refused = admin_client.post(change, form("alice-tavily", "tavily", fake_search.tavily_url,
                                             alice, clear_api_key="on"))
    assert refused.context["adminform"].form.errors == {
        "api_key": ["This backend needs the Tavily API key."]}


def test_an_admin_backend_serves_its_tenant_only(admin_client, tenants, fake_search):
    alice, bob = tenants
    assert admin_client.post(ADD, form("alice-tavily", "tavily", fake_search.tavily_url,
                                       alice, TAVILY_KEY)).status_code == 302
    assert search(alice) == [WebResult(*page) for page in PAGES]
    assert [(r["method"], r["path"], r["body"]["query"]) for r in fake_search.requests()] == [
        ("POST", "/tavily/search", "python 3.14")]
    assert backend_table().for_tenant(bob.id) is None  # bob's web_search is dropped
    with pytest.raises(SearchFailed, match="^no search backend is configured$"):
        search(bob)
    assert len(fake_search.requests()) == 1


def test_a_tenants_backend_wins_over_the_default_row_which_wins_over_settings(
        admin_client, tenants, fake_search, settings):
    alice, bob = tenants
    settings.WEB_SEARCH_BACKEND = "brave"  # the fallback: nobody uses it below
    settings.WEB_SEARCH_URL = fake_search.brave_url
    assert admin_client.post(ADD, form("default", "searxng", fake_search.searxng_url)
                             ).status_code == 302
    assert admin_client.post(ADD, form("alice-tavily", "tavily", fake_search.tavily_url,
                                       alice, TAVILY_KEY)).status_code == 302
    search(alice)
    search(bob)
    assert [r["path"] for r in fake_search.requests()] == ["/tavily/search", "/search"]
    WebSearchBackend.objects.filter(name="default").update(enabled=False)
    assert backend_table().for_tenant(bob.id).name == "default"  # still cached
    WebSearchBackend.objects.get(name="alice-tavily").save()  # a save forgets the table
    assert backend_table().for_tenant(bob.id).name == "settings"


def test_one_enabled_backend_per_tenant(admin_client, tenants, fake_search):
    alice, _ = tenants
    for name in ("first", "second"):
        response = admin_client.post(ADD, form(name, "searxng", fake_search.searxng_url,
                                               alice))
    assert response.context["adminform"].form.non_field_errors() == [
        "An enabled web search backend already serves this tenant (or, with no tenant, "
        "the deployment)."]
    for name in ("default", "another default"):
        response = admin_client.post(ADD, form(name, "searxng", fake_search.searxng_url))
    assert response.status_code == 200
    assert WebSearchBackend.objects.count() == 2


def test_the_egress_guard_refuses_a_private_backend(admin_client, tenants, fake_search,
                                                    settings):
    alice, _ = tenants
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = []
    refused = admin_client.post(ADD, form("lan", "searxng", fake_search.searxng_url, alice))
    assert refused.context["adminform"].form.errors == {"url": [
        "The egress guard refuses this URL: 127.0.0.1 is not a globally routable address."]}
    # a name is resolved when searching: the same refusal as the settings' backend gets
    by_name = fake_search.searxng_url.replace("127.0.0.1", "localhost")
    assert admin_client.post(ADD, form("lan", "searxng", by_name, alice)).status_code == 302
    with pytest.raises(SearchFailed) as failed:
        search(alice)
    assert str(failed.value) == ("the search backend may not be reached: localhost resolves "
                                 "to 127.0.0.1, which is not a globally routable address")
    assert fake_search.requests() == []


def test_keys_rotate_and_a_key_no_key_opens_fails_the_search_clearly(admin_client, tenants,
                                                                       fake_search, settings):
    import io

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    alice, _ = tenants
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [old]
    assert admin_client.post(ADD, form("alice-tavily", "tavily", fake_search.tavily_url,
                                       alice, TAVILY_KEY)).status_code == 302
    settings.ENCRYPTION_KEYS = [new, old]
    call_command("rotate_upstream_keys", stdout=io.StringIO())
    settings.ENCRYPTION_KEYS = [new]
    assert WebSearchBackend.objects.get(name="alice-tavily").api_key() == TAVILY_KEY
    settings.ENCRYPTION_KEYS = [old]
    with pytest.raises(SearchFailed) as failed:
        search(alice)
    assert str(failed.value) == ("the search backend 'alice-tavily' cannot be used: its API "
                                 "key cannot be decrypted")
    assert fake_search.requests() == []
