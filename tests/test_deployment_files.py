"""docker-compose.yml, .env.example, the Dockerfile and the lockfiles, checked by construction
(no Docker here; scripts/compose_check.sh runs the stack for real): the services of the full
deployment, each with a health check, every variable they pass is one the settings (or a
library the gateway runs) read, the web published on loopback only, PostgreSQL's major pinned
once and a volume of another major refused, and every dependency is locked."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SETTINGS_SOURCE = "".join(  # gateway/settings.py and the parts it takes (*_settings.py)
    path.read_text() for path in sorted((ROOT / "gateway").glob("*settings.py")))
SETTINGS_NAMES = set(re.findall(r'env\.\w+\("([A-Z0-9_]+)"', SETTINGS_SOURCE))
INTERPOLATION = re.compile(r"\$\{([A-Z0-9_]+)(?:[:?-][^}]*)?\}")
# Read by docker compose itself or by the Postgres image, not by the gateway.
COMPOSE_ONLY = {"POSTGRES_PASSWORD", "WEB_BIND", "WEB_PORT", "PYTHON_IMAGE", "POSTGRES_IMAGE",
                "REDIS_IMAGE"}
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


def test_the_web_is_published_on_loopback_unless_told_otherwise():
    assert COMPOSE["services"]["web"]["ports"] == ["${WEB_BIND:-127.0.0.1}:${WEB_PORT:-8000}:8000"]
    assert [service for service, spec in COMPOSE["services"].items() if "ports" in spec] == ["web"]
    example = env_example()
    assert (example["WEB_BIND"], example["WEB_PORT"]) == ("127.0.0.1", "8000")
    # production settings (gateway/checks.py) refuse `*` and want the hosts named
    assert (example["ALLOWED_HOSTS"], example["PUBLIC_URL"]) == ("localhost", "")


def test_the_secret_commands_in_env_example_need_only_the_standard_library():
    """Run as printed, by a Python without site-packages (-S): no `cryptography` on the host."""
    from cryptography.fernet import Fernet

    text = (ROOT / ".env.example").read_text()
    commands = dict((names, code) for code, names in re.findall(
        r"^#\s+python3 -c '([^']+)'\s+\(([^)]+)\)$", text, re.M))
    assert sorted(commands) == ["ENCRYPTION_KEYS: a Fernet key", "SECRET_KEY, POSTGRES_PASSWORD"]
    outputs = {names: subprocess.run([sys.executable, "-S", "-c", code], capture_output=True,
                                     text=True, check=True).stdout.strip()
               for names, code in commands.items()}
    Fernet(outputs["ENCRYPTION_KEYS: a Fernet key"].encode())
    assert len(outputs["SECRET_KEY, POSTGRES_PASSWORD"]) == 64


def postgres_major_of_compose() -> str:
    """What scripts/docker_base_images.sh builds the local PostgreSQL image with, read by the
    script's own line from docker-compose.yml."""
    script = (ROOT / "scripts" / "docker_base_images.sh").read_text()
    [line] = [line for line in script.splitlines() if line.startswith("PG_MAJOR=")]
    return subprocess.run(["bash", "-c", f"{line} && echo $PG_MAJOR"], check=True, text=True,
                          cwd=ROOT / "scripts" / "docker-base", capture_output=True).stdout.strip()


def test_postgres_major_is_pinned_once_for_the_registry_and_the_local_image():
    assert COMPOSE["services"]["postgres"]["image"] == "${POSTGRES_IMAGE:-pgvector/pgvector:pg16}"
    assert postgres_major_of_compose() == "16"
    dockerfile = (ROOT / "scripts" / "docker-base" / "postgres.Dockerfile").read_text()
    assert "ARG PG_MAJOR\n" in dockerfile and "ENV PG_MAJOR=${PG_MAJOR}" in dockerfile
    # the wheel's PostgreSQL must be the pinned major, and ship pgvector, or the build fails
    assert 'grep -q "^postgres (PostgreSQL) ${PG_MAJOR}\\."' in dockerfile
    assert "test -f /opt/pgserver/pgserver/pginstall/share/postgresql/extension/vector.control" \
        in dockerfile


def test_the_local_postgres_image_installs_the_locked_pgserver_wheel():
    """scripts/docker_base_images.sh's pgserver.txt: requirements.lock's pgserver line and
    every one of its hashes (pip --require-hashes in the image's build)."""
    script = (ROOT / "scripts" / "docker_base_images.sh").read_text()
    [program] = re.findall(r"^awk '([^']+)'", script, re.MULTILINE)
    written = subprocess.run(["awk", program, "requirements.lock"], check=True, text=True,
                             capture_output=True, cwd=ROOT).stdout
    lock = (ROOT / "requirements.lock").read_text()
    start = lock.index("\npgserver==") + 1
    assert written == lock[start:lock.index("    # via", start)]
    assert written.startswith("pgserver==") and written.splitlines()[1].startswith(
        "    --hash=sha256:")


def guard(tmp_path, made: str | None) -> subprocess.CompletedProcess:
    """The postgres service's entrypoint, as compose runs it (`$$` is compose's `$`), on a
    data directory made by PostgreSQL `made` (None: empty), in an image of PostgreSQL 16."""
    entrypoint = COMPOSE["services"]["postgres"]["entrypoint"]
    command = COMPOSE["services"]["postgres"]["command"]
    assert entrypoint[:2] == ["sh", "-c"] and command == ["postgres"]
    pgdata, bin_dir = tmp_path / "data", tmp_path / "bin"
    pgdata.mkdir()
    bin_dir.mkdir()
    if made:
        (pgdata / "PG_VERSION").write_text(made + "\n")
    stub = bin_dir / "docker-entrypoint.sh"  # the image's own entrypoint
    stub.write_text('#!/bin/sh\necho "image entrypoint: $*"\n')
    stub.chmod(0o755)
    return subprocess.run(
        [entrypoint[0], entrypoint[1], entrypoint[2].replace("$$", "$"), *entrypoint[3:],
         *command], capture_output=True, text=True, timeout=10,
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}", "PGDATA": str(pgdata), "PG_MAJOR": "16"})


def test_a_data_volume_of_another_postgres_major_is_refused_by_name(tmp_path):
    refused = guard(tmp_path, "15")  # a volume from postgres:15, compose's default before
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.splitlines() == [
        "Refusing to start: the postgres-data volume holds PostgreSQL 15 data and this image "
        "runs PostgreSQL 16.",
        "Set POSTGRES_IMAGE to a PostgreSQL 15 image with pgvector (pgvector/pgvector:pg15) in "
        ".env to keep using it, or move the data (docs/operations.md#postgresql-major-version)."]


@pytest.mark.parametrize("made", [None, "16"])
def test_a_new_or_same_major_volume_starts_the_image_entrypoint(tmp_path, made):
    started = guard(tmp_path, made)
    assert (started.returncode, started.stdout, started.stderr) == (
        0, "image entrypoint: postgres\n", "")


def test_the_build_context_leaves_out_local_state():
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for pattern in (".venv", ".env", ".git", "var", "**/*.egg-info", "**/__pycache__"):
        assert pattern in ignored


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
