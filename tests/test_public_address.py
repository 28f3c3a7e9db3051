"""The public address (gateway/public_url.py) and the production checks (gateway/checks.py):
what PUBLIC_URL derives, what production refuses, and `manage.py check --deploy` clean on
the documented production settings: compose's, from .env.example with PUBLIC_URL set."""
import base64
import os
import re
import secrets
import subprocess

import pytest
from django.core.exceptions import ImproperlyConfigured

from gateway import public_url
from gateway.checks import production_problems
from tests.servers import PYTHON, ROOT
from tests.test_deployment_files import COMPOSE, env_example

PRODUCTION = {"debug": False, "database_url": "postgres://gateway@postgres:5432/gateway",
              "public_url": "", "hosts_named": [], "secret_key": secrets.token_urlsafe(48)}


@pytest.mark.parametrize("value, expected", [
    ("https://gw.example.com", ("https", "gw.example.com", "https://gw.example.com")),
    ("https://gw.example.com/", ("https", "gw.example.com", "https://gw.example.com")),
    ("https://gw.example.com:443", ("https", "gw.example.com", "https://gw.example.com")),
    ("https://GW.example.com:8443", ("https", "gw.example.com", "https://gw.example.com:8443")),
    ("http://10.0.0.5:8000", ("http", "10.0.0.5", "http://10.0.0.5:8000")),
    ("https://[2001:db8::1]", ("https", "[2001:db8::1]", "https://[2001:db8::1]")),
])
def test_a_public_url_gives_its_scheme_host_and_origin(value, expected):
    parsed = public_url.parse(value)
    assert (parsed.scheme, parsed.host, parsed.origin) == expected


@pytest.mark.parametrize("value", [
    "gw.example.com", "ftp://gw.example.com", "https://gw.example.com/gateway",
    "https://gw.example.com?x=1", "https://user:pw@gw.example.com", "https://gw.example.com:99999",
    "https://"])
def test_anything_but_scheme_host_and_port_is_refused_by_name(value):
    with pytest.raises(ImproperlyConfigured) as refused:
        public_url.parse(value)
    assert str(refused.value) == (
        "PUBLIC_URL must be scheme://host[:port] (e.g. https://gw.example.com), with no path, "
        f"query or credentials: got {value!r}.")


def test_the_public_host_and_the_loopback_names_are_allowed_once_each():
    public = public_url.parse("https://gw.example.com")
    assert public_url.allowed_hosts([], None) == ["localhost", "127.0.0.1", "[::1]"]
    assert public_url.allowed_hosts(public_url.listed(["api.example.com", " localhost", ""]),
                                    public) == [
        "api.example.com", "localhost", "gw.example.com", "127.0.0.1", "[::1]"]
    assert public_url.csrf_trusted_origins(["https://admin.example.com"], public) == [
        "https://admin.example.com", "https://gw.example.com"]
    assert public_url.proxy_ssl_header("X-Forwarded-Proto") == ("HTTP_X_FORWARDED_PROTO", "https")
    assert public_url.proxy_ssl_header("") is None


def test_production_needs_its_host_names_and_a_secret_key():
    assert production_problems(**{**PRODUCTION, "public_url": "https://gw.example.com"}) == []
    assert production_problems(**{**PRODUCTION, "hosts_named": ["gw.example.com"]}) == []
    unnamed = production_problems(**{**PRODUCTION, "secret_key": "dev-insecure-change-me-0000"})
    starred = production_problems(**{**PRODUCTION, "hosts_named": ["gw.example.com", "*"],
                                     "public_url": "https://gw.example.com"})
    assert [e.id for e in unnamed] == ["gateway.E001", "gateway.E003"]
    assert [e.id for e in starred] == ["gateway.E002"]
    assert starred[0].msg == "ALLOWED_HOSTS is '*': any Host header is served in production."


def test_outside_production_nothing_is_required():
    """`make run` (no DATABASE_URL) and DEBUG need no settings at all."""
    local = {**PRODUCTION, "hosts_named": ["*"], "secret_key": "dev-insecure-change-me-0"}
    assert production_problems(**{**local, "database_url": ""}) == []
    assert production_problems(**{**local, "debug": True}) == []


def documented_production_env(tmp_path) -> dict:
    """What compose gives the web container: .env.example filled in as its comments say, with
    PUBLIC_URL set, and compose's own `environment` (interpolated from it)."""
    filled = {**env_example(), "SECRET_KEY": secrets.token_urlsafe(48),
              "ENCRYPTION_KEYS": base64.urlsafe_b64encode(os.urandom(32)).decode(),
              "POSTGRES_PASSWORD": secrets.token_hex(16), "PUBLIC_URL": "https://gw.example.com"}
    composed = {name: re.sub(r"\$\{([A-Z0-9_]+)[^}]*\}", lambda m: filled[m.group(1)], value)
                for name, value in COMPOSE["services"]["web"]["environment"].items()}
    # the metrics volume's path exists in the container only
    return {"PATH": os.environ["PATH"], **filled, **composed,
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}


def run(env: dict, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, *command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_check_deploy_is_clean_on_the_documented_production_settings(tmp_path):
    done = run(documented_production_env(tmp_path), "manage.py", "check", "--deploy")
    # security.W021 (HSTS preload) is silenced on purpose: see gateway/address_settings.py
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "System check identified no issues (1 silenced).\n", "")


def test_the_web_process_refuses_to_serve_production_without_host_names(tmp_path):
    env = {**documented_production_env(tmp_path), "PUBLIC_URL": "", "ALLOWED_HOSTS": ""}
    done = run(env, "-m", "gateway.serve", "-b", "127.0.0.1", "-p", "1", "gateway.asgi:application")
    assert done.returncode == 1
    assert done.stderr.splitlines()[:4] == [
        "SystemCheckError: System check identified some issues:", "", "ERRORS:",
        "?: (gateway.E001) Neither PUBLIC_URL nor ALLOWED_HOSTS is set in production "
        "(DATABASE_URL set, DEBUG off)."]
