"""The ASGI application served by Daphne: HTTP is Django's, the streaming views
(responses_app/api/stream_views.py) through the ASGI front that skips the middleware chain
(responses_app/api/asgi_front.py); WebSockets to /v1/responses are WebSocket mode
(responses_app/api/websocket.py), other WebSocket paths are refused."""
import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

django_app = get_asgi_application()

from responses_app import backends  # noqa: E402
from responses_app.delivery import watchdog  # noqa: E402
from responses_app.api.asgi_front import serve_streaming_views  # noqa: E402
from responses_app.api.websocket import websocket_application  # noqa: E402
from observability.tracing import wrap_asgi  # noqa: E402
from vector_stores import sign_backfill  # noqa: E402


# Every web process watches for runs whose worker died; embedded, it is the worker too.
watchdog.start_background_thread(beat=backends.in_process())
# Embedded there is no celery beat: the chunks an upgrade left without sign bits are signed
# on a timer of this process instead (EMBEDDED_SIGN_INTERVAL_SECONDS; the test process: 0).
if backends.in_process():
    sign_backfill.start_embedded_thread()

application = wrap_asgi(ProtocolTypeRouter({  # a server span per request when tracing
    "http": serve_streaming_views(django_app),
    "websocket": websocket_application(),
}))
