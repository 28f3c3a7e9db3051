"""The admin's "View site" link leads to a page that answers: the readiness report."""
import pytest

pytestmark = pytest.mark.django_db


def test_view_site_links_to_the_readiness_report(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert '<a href="/readyz">View site</a>' in index
    assert admin_client.get("/readyz")["Content-Type"] == "application/json"
