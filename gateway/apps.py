"""The project package as an app, for its system checks (gateway/checks.py)."""
from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "gateway"
    verbose_name = "Gateway"

    def ready(self):
        from . import checks  # noqa: F401  (registers the deployment checks)
