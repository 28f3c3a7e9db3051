"""App config for upstream routing: which Chat Completions server serves which model."""
from django.apps import AppConfig


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = "Upstreams"

    def ready(self):
        from . import checks, signals  # noqa: F401  (registers the system check and receivers)
