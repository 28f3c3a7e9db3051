"""docker-compose.yml, .env.example, the Dockerfile and the lockfiles, checked by construction
(no Docker here; scripts/compose_check.sh runs the stack for real): the services of the full
deployment, each with a health check, every variable they pass is one the settings (or a
library the gateway runs) read, and every dependency is locked."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SETTINGS_SOURCE = (ROOT / "gateway" / "settings.py").read_text()
SETTINGS_NAMES = set(re.findall(r'env\.\w+\("([A-Z0-9_]+)"', SETTINGS_SOURCE))
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?:[:?-][^}]*)?\}")
# Read by docker compose itself or by the Postgres image, not by the gateway.
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "WEB_PORT", "PYTHON_IMAGE", "POSTGRES_IMAGE", "REDIS_IMAGE"}
# Read from the environment by a library: prometheus_client, the OpenTelemetry SDK.
LIBRARY_NAMES = re.compile(r"PROMETHEUS_MULTIPROC_DIR|OTEL_[A-Z0-9_]+")
GATEWAY_SERVICES = ("web", "worker", "beat")


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
        "exec python -m gateway.serve -b 0.0.0.0 -p 8000 gateway.asgi:application")
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
    assert used == declared == {"postgres-data", "redis-data", "beat-data", "metrics", "files"}


def test_web_and_workers_share_the_metrics_volume():
    for name in GATEWAY_SERVICES:
        service = COMPOSE["services"][name]
        assert "metrics:/var/lib/gateway-metrics" in service["volumes"], name
        assert service["environment"]["PROMETHEUS_MULTIPROC_DIR"] == "/var/lib/gateway-metrics"


def test_every_variable_the_gateway_gets_is_a_setting():
    for name, service in COMPOSE["services"].items():
        if name in ("postgres", "redis"):
            continue
        unknown = {variable for variable in set(service["environment"]) - SETTINGS_NAMES
                   if not LIBRARY_NAMES.fullmatch(variable)}
        assert not unknown, (name, unknown)


def test_every_setting_in_env_reaches_the_gateway():
    for name in GATEWAY_SERVICES:
        assert COMPOSE["services"][name]["env_file"] == ".env", name


def test_env_example_lists_what_compose_reads_and_only_settings():
    text = (ROOT / "docker-compose.yml").read_text()
    interpolated = set(INTERPOLATION.findall(text))
    assert interpolated <= set(env_example())
    unknown = {name for name in set(env_example()) - SETTINGS_NAMES - COMPOSE_ONLY
               if not LIBRARY_NAMES.fullmatch(name)}
    assert not unknown


def test_the_image_runs_unprivileged_with_a_command_from_the_lockfile():
    lines = [line.split(None, 1) for line in (ROOT / "Dockerfile").read_text().splitlines()
             if line.strip() and not line.startswith(("#", " "))]
    instructions = [(word, rest.strip()) for word, rest in lines]
    assert ("RUN", "pip install --require-hashes -r requirements.lock") in instructions
    assert ("USER", "gateway") in instructions
    assert instructions[-1] == (
        "CMD", '["python", "-m", "gateway.serve", "-b", "0.0.0.0", "-p", "8000", '
               '"gateway.asgi:application"]')


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=;~! ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
            for requirement in requirements}


def _locked_names(lockfile: str) -> set[str]:
    return set(re.findall(r"^([a-z0-9][a-z0-9._-]*)==", (ROOT / lockfile).read_text(), re.M))


def test_every_declared_dependency_is_locked_with_hashes():
    """A dependency added to pyproject.toml without `make lock` fails here."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    main = _requirement_names(project["dependencies"])
    test = _requirement_names(project["optional-dependencies"]["test"])
    assert main <= _locked_names("requirements.lock")
    assert main | test <= _locked_names("requirements-test.lock")
    for lockfile in ("requirements.lock", "requirements-test.lock"):
        pins = re.findall(r"^(\S+==\S+)(?:[^\n]* \\\n    (--hash=sha256:[0-9a-f]{64}))?",
                          (ROOT / lockfile).read_text(), re.M)
        assert pins and all(hashed for _, hashed in pins), lockfile
