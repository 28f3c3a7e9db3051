"""The embedded PostgreSQL: the database when no DATABASE_URL is set.

PostgreSQL's own binaries come from the `pgserver` wheel. The settings of every process
(Daphne, `manage.py`, a Celery worker) call `database_settings`: the first process creates
the data directory (`EMBEDDED_PGDATA`, default `var/pgdata`) and starts the server on a unix
socket in it; the others find it running and connect to the same server. pgserver counts
the processes using it and stops the server when the last one exits, so the data survives
restarts and nothing keeps running after `make run` ends. As root, pgserver runs the server
as its own system user (`pgserver`), since PostgreSQL refuses to run as root.
"""
import logging
import warnings
from pathlib import Path


def database_settings(pgdata: Path) -> dict:
    """Django's `DATABASES["default"]` for the embedded server on `pgdata`, started if needed."""
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set, falling back"
        warnings.simplefilter("ignore")
        import pgserver

    logging.getLogger("pgserver").setLevel(logging.WARNING)  # its INFO tells each command
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    postmaster = server.get_postmaster_info()
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(postmaster.socket_dir),
        "PORT": str(postmaster.port),
    }
