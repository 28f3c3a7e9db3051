"""The ASGI application served by Daphne: `POST /v1/responses` takes the lean front in
responses_app.asgi_front; everything else (the other /v1 endpoints, admin) is Django."""
import os
from functools import lru_cache

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

django_app = get_asgi_application()

from django.conf import settings  # noqa: E402

from responses_app import watchdog  # noqa: E402
from responses_app.asgi_front import refuse_websocket, route_hot_paths  # noqa: E402


def _remember_parsed_content_types() -> None:
    """Twisted parses each POST's Content-Type with the email package (~90 µs, a few per
    cent of the web's CPU per streamed response) only to see whether the body is a form.
    The result depends on the header's value alone: remember the few values clients send."""
    from twisted.web import http

    parse = getattr(http, "_parseContentType", None)
    if parse is not None and not hasattr(parse, "cache_info"):
        http._parseContentType = lru_cache(maxsize=256)(parse)


_remember_parsed_content_types()

# Every web process watches for runs whose worker died; embedded, it is the worker too.
watchdog.start_background_thread(beat=settings.EMBEDDED)

application = ProtocolTypeRouter({
    "http": route_hot_paths(django_app),
    "websocket": refuse_websocket,
})
