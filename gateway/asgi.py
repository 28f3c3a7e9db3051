"""The ASGI application served by Daphne: `POST /v1/responses` takes the lean front in
responses_app.asgi_front; everything else (the other /v1 endpoints, admin) is Django."""
import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

django_app = get_asgi_application()

from django.conf import settings  # noqa: E402

from gateway import twisted_tuning  # noqa: E402
from responses_app import watchdog  # noqa: E402
from responses_app.asgi_front import refuse_websocket, route_hot_paths  # noqa: E402


twisted_tuning.install()

# Every web process watches for runs whose worker died; embedded, it is the worker too.
watchdog.start_background_thread(beat=settings.EMBEDDED)

application = ProtocolTypeRouter({
    "http": route_hot_paths(django_app),
    "websocket": refuse_websocket,
})
