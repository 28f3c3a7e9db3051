"""App config for the hosted tools: its system checks, and the signals that make a saved
search backend seen at once."""
from django.apps import AppConfig


class HostedToolsConfig(AppConfig):
    name = "hosted_tools"
    verbose_name = "Hosted tools"

    def ready(self):
        from . import checks, signals  # noqa: F401  (registers the checks and receivers)
