"""The dashboard in a real browser: headless Chromium against the production deployment
(Daphne, Celery, Postgres, Redis) after a known set of responses — completed and failed,
two tenants, two models — shows their exact counts and token sums, filters by tenant, and
links each error code to the response list filtered to it. Screenshots go to
var/screenshots/ (the README's picture, docs/admin-dashboard.png, shows a day of synthetic
traffic instead)."""
import time

import pytest
from django.contrib.admin.utils import quote

from tests.test_admin_browser_e2e import browser_page, shoot, visit  # noqa: F401

pytestmark = pytest.mark.services

PASSWORD = "dashboard-test-password"


@pytest.fixture(scope="module")
def traffic(production):
    """Tenant dash-one: two completed fake-text, one completed fake-echo; tenant dash-two:
    one completed fake-echo and a background fake-429, which fails (the upstream's 429)."""
    sent = {}
    for tenant, models in (("dash-one", ["fake-text", "fake-text", "fake-echo"]),
                           ("dash-two", ["fake-echo", "fake-429"])):
        with production.client(production.new_api_key(tenant)) as api:
            sent[tenant] = [_finished(api, api.post("/responses", json={
                "model": model, "input": "Hello", "background": model == "fake-429"}).json())
                for model in models]
    return sent


def _finished(api, response: dict) -> dict:
    """The response once it has ended (a background one is polled, for up to 30 s)."""
    deadline = time.monotonic() + 30
    while response["status"] in ("queued", "in_progress") and time.monotonic() < deadline:
        time.sleep(0.1)
        response = api.get(f"/responses/{response['id']}").json()
    return response


def sums(responses: list[dict]) -> tuple[str, str, str]:
    """(responses, input tokens, output tokens) as the tables show them."""
    return (str(len(responses)),
            str(sum((r["usage"] or {}).get("input_tokens", 0) for r in responses)),
            str(sum((r["usage"] or {}).get("output_tokens", 0) for r in responses)))


def cells(page, selector: str) -> list[list[str]]:
    rows = page.locator(f"{selector} tbody tr")
    return [[cell.strip() for cell in rows.nth(i).locator("td").all_text_contents()]
            for i in range(rows.count())]


def test_the_dashboard_shows_the_traffic(production, traffic, browser_page):  # noqa: F811
    one, two = traffic["dash-one"], traffic["dash-two"]
    assert [r["status"] for r in one + two] == ["completed"] * 4 + ["failed"]
    failed_code = two[1]["error"]["code"]
    production.manage("shell", "-c", (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('dash', 'dash@example.org', '{PASSWORD}')"))
    page = browser_page
    admin = f"http://127.0.0.1:{production.port}/admin/"
    page.context.clear_cookies()
    visit(page, production, admin)
    page.fill("#id_username", "dash")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation() as login:
        page.click("input[type=submit]")
    assert login.value.status == 200
    assert page.title() == "Dashboard | Responses gateway"
    assert page.locator("#site-name").inner_text() == "Responses gateway"

    # every tenant (the shared deployment's other tests' too): the page and its parts
    assert page.locator("#now-workers").inner_text() == "1"
    assert page.locator("svg.chart").count() == 4

    # dash-one, the last hour: exactly its three responses
    page.click("#window-hour")
    page.wait_for_load_state()
    page.select_option("#dash-tenant", label="dash-one")
    with page.expect_navigation():
        page.click("#dashboard-filters input[type=submit]")
    assert cells(page, "#tenants-table") == [["dash-one", *sums(one)]]
    assert sorted(tuple(row) for row in cells(page, "#models-table")) == [
        ("fake-echo", *sums(one[2:])), ("fake-text", *sums(one[:2]))]
    assert cells(page, "#errors-table") == [["No errors in this window."]]
    assert page.locator("#now-in-flight").inner_text() == "0"

    # one tenant: its own totals, models and errors
    page.select_option("#dash-tenant", label="dash-two")
    with page.expect_navigation():
        page.click("#dashboard-filters input[type=submit]")
    assert "window=hour" in page.url
    assert page.locator("#dash-scope").inner_text() == "dash-two"
    assert cells(page, "#tenants-table") == [["dash-two", *sums(two)]]
    assert [page.locator(f"#{name}").inner_text() for name in
            ("total-responses", "total-failed")] == ["2", "1"]
    totals = page.locator("#requests-table tfoot th").all_text_contents()
    assert totals == ["total", "1", "1", "0", "0", "0", "2"]
    tokens = page.locator("#tokens-table tfoot th").all_text_contents()
    assert tokens == ["total", *sums(two)[1:]]
    assert sorted(tuple(row) for row in cells(page, "#models-table")) == [
        ("fake-429", *sums(two[1:])), ("fake-echo", *sums(two[:1]))]
    assert cells(page, "#errors-table") == [[failed_code, "1"]]
    latency = cells(page, "#latency-table")
    # the completed one published a first delta; the failed one never started
    assert (sum(int(row[4]) for row in latency), sum(int(row[8]) for row in latency)) == (1, 1)
    screenshot = shoot(page, "admin-dashboard-tenant")

    # every tenant again, for the picture of the README
    page.select_option("#dash-tenant", label="all tenants")
    with page.expect_navigation():
        page.click("#dashboard-filters input[type=submit]")
    assert (screenshot.exists(), shoot(page, "admin-dashboard").exists()) == (True, True)

    # the error code leads to the list of exactly that failed response
    page.select_option("#dash-tenant", label="dash-two")
    with page.expect_navigation():
        page.click("#dashboard-filters input[type=submit]")
    with page.expect_navigation() as listed:
        page.click(f"#errors-table a:has-text('{failed_code}')")
    assert listed.value.status == 200
    assert f"error_code={failed_code}" in page.url
    rows = page.locator("#response-list tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("a").first.get_attribute("href").endswith(
        f"/{quote(two[1]['id'])}/change/")
