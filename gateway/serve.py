"""The web process: Daphne's own command line, its event loop uvloop's when installed.

Daphne makes its event loop (and installs Twisted's asyncio reactor on it) as
`daphne.server` is imported, with asyncio's default loop. This entry point sets uvloop's
loop policy first, then hands its arguments to Daphne's command line unchanged:

    python -m gateway.serve -b 127.0.0.1 -p 8000 gateway.asgi:application

Without uvloop (Windows) it is plain `daphne`.
"""
import asyncio


def use_uvloop() -> None:
    """New event loops are uvloop's from now on (before `daphne.server` is imported)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def main() -> None:
    use_uvloop()
    from daphne.cli import CommandLineInterface

    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
