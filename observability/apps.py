"""App config: stale live-gauge files of dead processes are dropped at start-up."""
from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "observability"
    verbose_name = "Observability"

    def ready(self):
        from .metrics import forget_dead_processes

        forget_dead_processes()
