"""App config for the hosted tools (no models: its system checks)."""
from django.apps import AppConfig


class HostedToolsConfig(AppConfig):
    name = "hosted_tools"
    verbose_name = "Hosted tools"

    def ready(self):
        from . import checks  # noqa: F401  (registers the system checks)
