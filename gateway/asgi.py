"""The ASGI application served by Daphne: HTTP goes to Django (API, SSE relay, admin)."""
import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

django_app = get_asgi_application()

application = ProtocolTypeRouter({"http": django_app})
