"""Behind a TLS-terminating proxy: a second Daphne web process on the shared production
deployment's database and Redis, configured as a proxied deployment is (PUBLIC_URL alone),
sent what a proxy sends (X-Forwarded-Proto: https, X-Forwarded-Host, the browser's HTTPS
Origin). The admin logs in through it; a Host it does not serve is refused; the shared
deployment, told of no proxy, trusts none of those headers (the 403 a proxied admin got)."""
import re

import httpx
import pytest

from tests.servers import Deployment

PUBLIC = "https://gw.example.com"
PROXIED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "gw.example.com",
           "X-Forwarded-For": "203.0.113.7"}
PASSWORD = "proxy-admin-password"

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def proxied(production, tmp_path_factory):
    """The web process a proxy forwards to, and the admin user `proxy-admin`."""
    production.manage("shell", "-c", (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('proxy-admin', 'admin@example.org', '{PASSWORD}')"))
    web = Deployment(tmp_path_factory.mktemp("proxied"), {
        **{name: production.env[name] for name in (
            "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "UPSTREAM_BASE_URL")},
        "PUBLIC_URL": PUBLIC, "ALLOWED_HOSTS": "", "WATCHDOG_ENABLED": "0"}, worker=False)
    web.start()
    try:
        yield web
    finally:
        web.stop()


def root(deployment) -> str:
    return deployment.base_url.removesuffix("/v1")


def cookies_set(response: httpx.Response) -> dict[str, str]:
    """Each Set-Cookie's name → its attributes (lowercase, sorted), without its value and
    its expiry date."""
    return {header.split("=", 1)[0]: "; ".join(sorted(
                part.strip().lower() for part in header.split(";")[1:]
                if part.strip() and not part.strip().lower().startswith("expires=")))
            for header in response.headers.get_list("set-cookie")}


def cookie_values(response: httpx.Response) -> dict[str, str]:
    return {header.split("=", 1)[0]: header.split("=", 1)[1].split(";", 1)[0]
            for header in response.headers.get_list("set-cookie")}


def log_in(base: str, headers: dict) -> tuple[httpx.Response, httpx.Response, dict]:
    """GET the login form and POST it as a browser at PUBLIC does; (form, answer, cookies).
    Cookies go by hand: they are Secure, which an http:// client jar keeps to itself."""
    with httpx.Client(base_url=base, timeout=30) as client:
        form = client.get("/admin/login/", params={"next": "/admin/"}, headers=headers)
        cookies = cookie_values(form)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        answer = client.post(
            "/admin/login/", params={"next": "/admin/"},
            data={"csrfmiddlewaretoken": token, "username": "proxy-admin", "password": PASSWORD,
                  "next": "/admin/"},
            headers={**headers, "Origin": PUBLIC, "Referer": f"{PUBLIC}/admin/login/",
                     "Cookie": f"csrftoken={cookies['csrftoken']}"})
    return form, answer, cookies


def test_the_admin_logs_in_through_the_proxy(proxied):
    form, answer, _ = log_in(root(proxied), PROXIED)
    assert form.status_code == 200
    assert form.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
    assert cookies_set(form) == {"csrftoken": "max-age=31449600; path=/; samesite=lax; secure"}
    assert (answer.status_code, answer.headers["location"]) == (302, "/admin/")
    assert cookies_set(answer) == {
        "csrftoken": "max-age=31449600; path=/; samesite=lax; secure",  # rotated at login
        "sessionid": "httponly; max-age=1209600; path=/; samesite=lax; secure"}
    session = cookie_values(answer)["sessionid"]
    with httpx.Client(base_url=root(proxied), timeout=30) as client:
        index = client.get("/admin/", headers={**PROXIED, "Cookie": f"sessionid={session}"})
    assert index.status_code == 200
    assert "<title>Dashboard | Responses gateway</title>" in index.text and "proxy-admin" in index.text


def test_the_admin_over_plain_http_is_sent_to_https_and_health_checks_are_not(proxied):
    with httpx.Client(base_url=root(proxied), timeout=30) as client:
        plain = client.get("/admin/login/", headers={"X-Forwarded-Host": "gw.example.com"})
        health = client.get("/healthz")
    assert (plain.status_code, plain.headers["location"]) == (
        301, "https://gw.example.com/admin/login/")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})


def test_the_api_answers_through_the_proxy(proxied, tenant_key):
    with httpx.Client(base_url=proxied.base_url, timeout=30,
                      headers={**PROXIED, "Authorization": f"Bearer {tenant_key}"}) as api:
        response = api.post("/responses", json={"model": "fake-text", "input": "via the proxy"})
    assert response.status_code == 200
    assert response.json()["status"] == "completed"


def test_a_host_it_does_not_serve_is_refused(proxied):
    with httpx.Client(base_url=root(proxied), timeout=30) as client:
        admin = client.get("/admin/login/", headers={**PROXIED,
                                                     "X-Forwarded-Host": "evil.example"})
        api = client.get("/v1/models", headers={"Host": "evil.example"})
    assert admin.status_code == 400
    assert (api.status_code, api.json()) == (400, {"error": {
        "message": "Bad request (check the Host header).", "type": "invalid_request_error",
        "param": None, "code": "bad_request"}})


def test_without_public_url_the_forwarded_headers_are_not_trusted(production, proxied):
    """The shared deployment names no proxy: the login a proxy forwards fails its Origin check
    (the issue's 403), and its cookies are not Secure."""
    form, answer, _ = log_in(root(production), PROXIED)
    assert cookies_set(form) == {"csrftoken": "max-age=31449600; path=/; samesite=lax"}
    assert "strict-transport-security" not in form.headers
    assert answer.status_code == 403
    assert "CSRF verification failed. Request aborted." in answer.text
    assert ("Forbidden (Origin checking failed - https://gw.example.com does not match any "
            "trusted origins.): /admin/login/") in production.logs()
