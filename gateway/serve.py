"""The web process: Daphne's own command line, its event loop uvloop's when installed.

Daphne makes its event loop (and installs Twisted's asyncio reactor on it) as
`daphne.server` is imported, with asyncio's default loop. This entry point sets uvloop's
loop policy first, then hands its arguments to Daphne's command line unchanged:

    python -m gateway.serve -b 127.0.0.1 -p 8000 gateway.asgi:application

Without uvloop (Windows) it is plain `daphne`. Before Daphne listens, the deployment
checks (gateway/checks.py) run: production settings that expose the deployment (no
ALLOWED_HOSTS, `*`, the development secret key) stop it here with their message.
"""
import asyncio
import io
import os
import sys


def use_uvloop() -> None:
    """New event loops are uvloop's from now on (before `daphne.server` is imported)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def refuse_unsafe_settings() -> None:
    """Exit with the deployment checks' errors, if any (Daphne runs no system checks)."""
    import django
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    django.setup()
    from gateway.checks import TAG

    try:
        call_command("check", tag=[TAG], stdout=io.StringIO())
    except SystemCheckError as refusal:
        sys.exit(str(refusal))


def main() -> None:
    use_uvloop()
    refuse_unsafe_settings()
    from daphne.cli import CommandLineInterface

    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
