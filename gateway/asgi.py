"""The ASGI application served by Daphne: `POST /v1/responses` takes the lean front in
responses_app.asgi_front; everything else (the other /v1 endpoints, admin) is Django."""
import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

django_app = get_asgi_application()

from responses_app.asgi_front import refuse_websocket, route_hot_paths  # noqa: E402

application = ProtocolTypeRouter({
    "http": route_hot_paths(django_app),
    "websocket": refuse_websocket,
})
