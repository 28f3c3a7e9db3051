"""API keys in the admin: created keys are shown once and work, revoked keys stop working,
last use is recorded at most once a minute; tenants link to their usage."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from responses_app.auth import resolve_api_key
from responses_app.errors import AuthenticationError
from responses_app.models import ApiKey, Tenant

pytestmark = pytest.mark.django_db

KEYS = "/admin/responses_app/apikey/"


@pytest.fixture
def alice():
    return Tenant.objects.create(name="alice")


def create_key(admin_client, tenant, name="ci"):
    page = admin_client.post(f"{KEYS}add/", {"tenant": tenant.pk, "name": name})
    assert page.status_code == 200
    return re.search(r'<pre class="block" id="new-api-key"[^>]*>(sk-[^<]+)</pre>',
                     page.content.decode()).group(1), page


def test_creating_a_key_shows_it_once_and_stores_only_its_hash(admin_client, alice):
    assert admin_client.get(f"{KEYS}add/").status_code == 200
    key, page = create_key(admin_client, alice)
    assert "no-store" in page["Cache-Control"]
    stored = ApiKey.objects.get()
    assert (stored.tenant, stored.name) == (alice, "ci")
    assert key.startswith(f"sk-{stored.prefix}_")
    assert key.split("_", 1)[1] not in stored.secret_hash
    assert resolve_api_key(f"Bearer {key}").tenant == alice
    change_page = admin_client.get(f"{KEYS}{stored.pk}/change/").content.decode()
    assert key not in change_page
    assert "secret_hash" not in change_page
    assert "API_KEY_CACHE_SECONDS" in change_page


def test_a_key_needs_a_tenant(admin_client):
    page = admin_client.post(f"{KEYS}add/", {"name": "x"})
    assert page.status_code == 200
    assert "This field is required." in page.content.decode()
    assert ApiKey.objects.count() == 0


def test_a_revoked_key_stops_authenticating(admin_client, alice, settings):
    settings.API_KEY_CACHE_SECONDS = 0
    key, _ = create_key(admin_client, alice)
    other, _ = create_key(admin_client, alice, name="other")
    assert resolve_api_key(f"Bearer {key}").tenant == alice
    revoked = ApiKey.objects.get(name="ci")
    page = admin_client.post(KEYS, {"action": "revoke", "_selected_action": [revoked.pk]},
                             follow=True)
    assert "Revoked 1 API key(s)." in page.content.decode()
    assert "API_KEY_CACHE_SECONDS" in page.content.decode()
    with pytest.raises(AuthenticationError):
        resolve_api_key(f"Bearer {key}")
    assert resolve_api_key(f"Bearer {other}").tenant == alice
    listing = admin_client.get(KEYS).content.decode()
    assert listing.count('<td class="field-state">revoked</td>') == 1
    assert listing.count('<td class="field-state">active</td>') == 1


def test_last_use_is_recorded_at_most_once_a_minute(admin_client, alice, settings):
    settings.API_KEY_CACHE_SECONDS = 0
    key, _ = create_key(admin_client, alice)
    assert ApiKey.objects.get().last_used_at is None
    resolve_api_key(f"Bearer {key}")
    first_use = ApiKey.objects.get().last_used_at
    assert first_use is not None
    resolve_api_key(f"Bearer {key}")
    assert ApiKey.objects.get().last_used_at == first_use
    ApiKey.objects.update(last_used_at=first_use - timedelta(minutes=2))
    resolve_api_key(f"Bearer {key}")
    assert ApiKey.objects.get().last_used_at > first_use - timedelta(minutes=1)
    assert ApiKey.objects.get().last_used_at <= timezone.now()


def test_the_tenant_pages_link_to_responses_and_usage(admin_client, alice):
    listing = admin_client.get("/admin/responses_app/tenant/").content.decode()
    assert f'href="/admin/responses_app/storedresponse/?tenant={alice.pk}"' in listing
    assert f'href="/admin/responses_app/tenant/{alice.pk}/usage/"' in listing
    assert admin_client.get(f"/admin/responses_app/tenant/{alice.pk}/change/").status_code == 200
