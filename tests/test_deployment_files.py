"""docker-compose.yml and .env.example, checked by construction (no Docker here): the
services of the full deployment, each with a health check, and every variable they pass
is one the settings read."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SETTINGS_SOURCE = (ROOT / "gateway" / "settings.py").read_text()
SETTINGS_NAMES = set(re.findall(r'env\.\w+\("([A-Z0-9_]+)"', SETTINGS_SOURCE))
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?:[:?-][^}]*)?\}")
# Read by docker compose itself or by the Postgres image, not by the gateway.
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "WEB_PORT"}


def env_example() -> dict:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value
    return pairs


def test_it_runs_the_whole_deployment():
    services = COMPOSE["services"]
    assert sorted(services) == ["beat", "postgres", "redis", "web", "worker"]
    assert services["web"]["command"][-1].endswith(
        "exec daphne -b 0.0.0.0 -p 8000 gateway.asgi:application")
    assert services["worker"]["command"][:4] == ["celery", "-A", "gateway", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "gateway", "beat"]
    assert "noeviction" in services["redis"]["command"]


def test_every_service_has_a_health_check_and_waits_for_healthy_dependencies():
    services = COMPOSE["services"]
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        assert service.get("restart") == "unless-stopped", name
        for dependency, condition in (service.get("depends_on") or {}).items():
            assert condition == {"condition": "service_healthy"}, (name, dependency)
            assert "healthcheck" in services[dependency]


def test_named_volumes_are_declared_and_data_is_kept():
    declared = set(COMPOSE["volumes"])
    used = {mount.split(":", 1)[0] for service in COMPOSE["services"].values()
            for mount in service.get("volumes", [])}
    assert used == declared == {"postgres-data", "redis-data", "beat-data"}


def test_every_variable_the_gateway_gets_is_a_setting():
    for name, service in COMPOSE["services"].items():
        if name in ("postgres", "redis"):
            continue
        unknown = set(service["environment"]) - SETTINGS_NAMES
        assert not unknown, (name, unknown)


def test_env_example_lists_exactly_what_compose_reads():
    text = (ROOT / "docker-compose.yml").read_text()
    interpolated = set(INTERPOLATION.findall(text))
    assert set(env_example()) == interpolated
    assert interpolated - COMPOSE_ONLY <= SETTINGS_NAMES


def test_secrets_are_required_and_not_shipped():
    text = (ROOT / "docker-compose.yml").read_text()
    for secret in ("SECRET_KEY", "ENCRYPTION_KEYS", "POSTGRES_PASSWORD"):
        assert re.search(r"\$\{" + secret + r":\?", text), secret
        assert env_example()[secret] == ""
    assert ".env" in (ROOT / ".gitignore").read_text().split()
