"""App config: the worker heartbeat follows the Celery worker's life (signals); stale
live-gauge files of dead processes are dropped at start-up."""
from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "observability"
    verbose_name = "Observability"

    def ready(self):
        from celery.signals import worker_ready, worker_shutdown

        from . import worker_heartbeat
        from .metrics import forget_dead_processes

        forget_dead_processes()
        worker_ready.connect(worker_heartbeat.on_worker_ready, weak=False)
        worker_shutdown.connect(worker_heartbeat.on_worker_shutdown, weak=False)
