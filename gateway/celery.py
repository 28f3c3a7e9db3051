"""The Celery application: configured from Django settings (CELERY_*), tasks found by name."""
import os

from celery import Celery
from celery.signals import worker_init, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

app = Celery("gateway")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["responses_app", "dashboard", "vector_stores"])


@worker_init.connect
def start_worker_heartbeat(sender=None, **_):
    """A worker announces itself before it takes any run, keeps its heartbeat fresh and
    takes its turn as the watchdog (see responses_app/watchdog.py), then takes runs from
    the run queue, as many at once as its --concurrency (responses_app/worker/run_queue.py).
    Celery itself only carries the periodic tasks."""
    from responses_app import watchdog
    from responses_app.worker.heartbeat import heartbeats
    from responses_app.worker.run_queue import start_consumer

    heartbeats().beat()
    watchdog.start_background_thread(beat=True)
    from django.conf import settings

    concurrency = getattr(sender, "concurrency", None)  # --concurrency, or the setting
    if not isinstance(concurrency, int):  # "auto"
        concurrency = settings.CELERY_WORKER_CONCURRENCY
    start_consumer(concurrency)


@worker_shutdown.connect
def stop_taking_runs(**_):
    """A warm shutdown takes no more runs and lets the runs in progress finish; the worker
    is gone at once for readiness, not after its heartbeat's TTL."""
    from responses_app.worker.heartbeat import heartbeats
    from responses_app.worker.run_queue import stop_consumer

    stop_consumer()
    try:
        heartbeats().forget()
    except Exception:  # Redis away: the key expires by itself
        pass
