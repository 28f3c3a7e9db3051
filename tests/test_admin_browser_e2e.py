"""The admin in a real browser: headless Chromium against the production deployment
(Daphne, Celery, Postgres, Redis) logs in, filters the response list, opens a chain of
three turns with a tool call, and opens the event stream of a streamed turn. Screenshots go
to var/screenshots/."""
import os
from pathlib import Path

import httpx
import pytest
from django.contrib.admin.utils import quote
from playwright.sync_api import sync_playwright

from tests.oracles import check_sse_stream
from tests.servers import ROOT

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = ROOT / "var" / "screenshots"
ADMIN_PASSWORD = "browser-test-password"
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def admin_user(production):
    production.manage("shell", "-c", (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('root', 'root@example.org', '{ADMIN_PASSWORD}')"))
    return "root"


@pytest.fixture(scope="module")
def chain(production):
    """Three turns of tenant `browser`: a tool call, its output, a streamed follow-up."""
    key = production.new_api_key("browser")
    with httpx.Client(base_url=production.base_url, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as api:
        first = api.post("/responses", json={
            "model": "fake-text-then-tool", "tools": [WEATHER_TOOL],
            "input": "Weather in Oslo?"}).json()
        second = api.post("/responses", json={
            "model": "fake-echo", "previous_response_id": first["id"], "tools": [WEATHER_TOOL],
            "input": [{"type": "function_call_output", "call_id": "call_oslo",
                       "output": '{"temp_c": 7}'}]}).json()
        with api.stream("POST", "/responses", json={
                "model": "fake-echo", "previous_response_id": second["id"], "stream": True,
                "input": "Thanks! <script>alert(1)</script>"}) as streamed:
            events, third = check_sse_stream(streamed.read())
    assert [first["status"], second["status"], third["status"]] == ["completed"] * 3
    return first, second, third, events


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"No Chromium at {CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()


def visit(page, production, url: str) -> None:
    """Open `url`; anything but a 200 fails with the deployment's logs."""
    response = page.goto(url)
    assert response.status == 200, f"{url}: {response.status}\n{production.logs()[-4000:]}"


def shoot(page, name: str) -> Path:
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_an_operator_follows_a_chain_in_the_browser(production, admin_user, chain,
                                                    browser_page):
    first, second, third, streamed_events = chain
    page = browser_page
    admin = f"http://127.0.0.1:{production.port}/admin/"

    visit(page, production, admin)
    page.fill("#id_username", admin_user)
    page.fill("#id_password", ADMIN_PASSWORD)
    with page.expect_navigation() as login:
        page.click("input[type=submit]")
    assert login.value.status == 200
    assert page.locator("#user-tools").inner_text().startswith("WELCOME, ROOT")
    css = httpx.get(f"http://127.0.0.1:{production.port}/static/admin/css/base.css")
    assert (css.status_code, css.headers["content-type"]) == (200, "text/css; charset=\"utf-8\"")

    # the list, filtered to the tenant's fake-echo turns
    visit(page, production, admin + "responses_app/storedresponse/")
    page.select_option("#id_tenant", label="browser")
    page.fill("#id_model", "fake-echo")
    with page.expect_navigation() as filtered:
        page.click("#response-filters input[type=submit]")
    assert filtered.value.status == 200 and "model=fake-echo" in page.url
    rows = page.locator("#response-list tbody tr")
    assert rows.count() == 2
    assert [rows.nth(i).locator("td").nth(1).inner_text() for i in range(2)] == ["browser"] * 2
    shoot(page, "admin-list")

    # the middle turn: the whole chain as three turns, the tool call readable
    with page.expect_navigation() as opened:
        page.click(f"#response-list a[href$='/{quote(second['id'])}/change/']")
    assert opened.value.status == 200, f"{opened.value.status}\n{production.logs()[-4000:]}"
    turns = page.locator("#timeline section.turn")
    assert turns.count() == 3
    assert [turns.nth(i).get_attribute("id") for i in range(3)] == [
        f"turn-{first['id']}", f"turn-{second['id']}", f"turn-{third['id']}"]
    first_turn = turns.nth(0).inner_text()
    assert "function call get_weather" in first_turn
    assert '{\n  "city": "Oslo"\n}' in first_turn
    assert "Let me check." in first_turn
    assert '{\n  "temp_c": 7\n}' in turns.nth(1).inner_text()
    assert "Thanks! <script>alert(1)</script>" in turns.nth(2).inner_text()
    assert page.locator("#previous-response").get_attribute("href").endswith(
        f"/{quote(first['id'])}/change/")
    assert page.locator(".next-response").get_attribute("href").endswith(
        f"/{quote(third['id'])}/change/")
    shoot(page, "admin-detail")

    # the streamed turn's events, as the client received them
    visit(page, production, f"{admin}responses_app/storedresponse/{third['id']}/events/")
    cells = page.locator("#events tbody tr td:nth-child(2)").all_inner_texts()
    numbers = page.locator("#events tbody tr td:nth-child(1)").all_inner_texts()
    assert cells == [event["type"] for event in streamed_events]
    assert numbers == [str(event["sequence_number"]) for event in streamed_events]
    assert page.locator("#events tbody tr td:nth-child(3)").first.inner_text() == "+0 ms"
    shoot(page, "admin-events")

    visit(page, production, f"{admin}responses_app/storedresponse/{quote(first['id'])}/change/")
    with page.expect_navigation() as usage:
        page.click("a[href*='/usage/']")
    assert usage.value.status == 200
    # responses, failed, input and output tokens (the worker stored each turn's usage)
    assert page.locator("#usage-totals dd").all_inner_texts() == ["3", "0", "36", "11"]
    shoot(page, "admin-usage")
