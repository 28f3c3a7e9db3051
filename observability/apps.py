"""App config: stale live-gauge files of dead processes are dropped at start-up, and
tracing starts (when the OTEL_* variables ask for it) before any middleware is loaded."""
from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "observability"
    verbose_name = "Observability"

    def ready(self):
        from . import tracing
        from .metrics import forget_dead_processes

        forget_dead_processes()
        tracing.setup()
