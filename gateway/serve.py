"""The web process: Daphne's own command line, its event loop uvloop's when installed, and
its WebSocket message limit the gateway's.

Daphne makes its event loop (and installs Twisted's asyncio reactor on it) as
`daphne.server` is imported, with asyncio's default loop. This entry point sets uvloop's
loop policy first, then hands its arguments to Daphne's command line:

    python -m gateway.serve -b 127.0.0.1 -p 8000 gateway.asgi:application

Daphne caps a WebSocket message (and frame) at 1 MiB by default and drops the TCP
connection past it, with no error and no close frame: a `response.create` the HTTP
endpoint takes (MAX_REQUEST_BODY_BYTES, 16 MiB) would kill the socket. Unless the
command line sets them, both caps are twice the gateway's limit: a message over the
limit but within the cap reaches the consumer, which answers it with its `request_too_large`
error frame (the socket stays usable); past the cap (a bound on what one socket makes the
server buffer) the server closes the socket with code 1009 (message too big) instead of
dropping it.

Without uvloop (Windows) the loop is asyncio's. Before Daphne listens, the deployment
checks (gateway/checks.py) run: production settings that expose the deployment (no
ALLOWED_HOSTS, `*`, the development secret key) stop it here with their message.
"""
import asyncio
import io
import os
import sys

MESSAGE_SIZE_OPTIONS = ("--websocket-max-message-size", "--websocket-max-frame-size")


def use_uvloop() -> None:
    """New event loops are uvloop's from now on (before `daphne.server` is imported)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def websocket_message_cap() -> int:
    """Daphne's cap on a WebSocket message: twice the gateway's request body limit."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    from django.conf import settings

    return 2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def daphne_arguments(arguments: list[str]) -> list[str]:
    """The command line's arguments, with the WebSocket caps unless they are given."""
    given = {argument.partition("=")[0] for argument in arguments}
    extra = []
    for option in MESSAGE_SIZE_OPTIONS:
        if option not in given:
            extra += [option, str(websocket_message_cap())]
    return extra + arguments


def gateway_server_class():
    """Daphne's Server, closing a socket whose message is over the cap (code 1009) instead
    of dropping its connection (autobahn's failByDrop, which Daphne leaves on); and without
    two things Twisted does for every HTTP request that nothing reads (bench/README.md,
    "Issue 31, the web's fixed cost per response"): it parses a POST's Content-Type
    through the email package, to fill `request.args` from a form body (Daphne hands the
    body to the application as it came, and never reads `args`), and it formats a
    combined-log access line that Daphne's Twisted log sends nowhere at verbosity 0-1
    (the access log is the gateway's own, observability/http.py, and Daphne's)."""
    from daphne.server import Server
    from twisted.web.http import Request

    class GatewayServer(Server):
        def listen_success(self, port):
            self.ws_factory.setProtocolOptions(failByDrop=False)
            if self.verbosity <= 1:  # Daphne.run: Twisted's log goes nowhere
                self.http_factory.log = _no_access_line
            return super().listen_success(port)

        def protocol_connected(self, protocol):
            if isinstance(protocol, Request):  # before its body is received
                protocol._parsePOSTFormSubmission = False
            return super().protocol_connected(protocol)

    return GatewayServer


def _no_access_line(request) -> None:
    """Twisted's HTTPFactory.log, when its line would be dropped."""


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

    CommandLineInterface.server_class = gateway_server_class()
    CommandLineInterface().run(daphne_arguments(sys.argv[1:]))


if __name__ == "__main__":
    main()
