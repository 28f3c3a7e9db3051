"""The Celery application: configured from Django settings (CELERY_*), tasks found by name."""
import os

from celery import Celery
from celery.signals import worker_init, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

app = Celery("gateway")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["responses_app"])


@worker_init.connect
def start_worker_heartbeat(**_):
    """A worker announces itself before it takes any task, then keeps its heartbeat fresh
    and takes its turn as the watchdog (see responses_app/watchdog.py)."""
    from responses_app import watchdog
    from responses_app.worker.heartbeat import heartbeats

    heartbeats().beat()
    watchdog.start_background_thread(beat=True)


@worker_shutdown.connect
def forget_worker_heartbeat(**_):
    """A worker stopping cleanly is gone at once for readiness, not after its TTL."""
    from responses_app.worker.heartbeat import heartbeats

    try:
        heartbeats().forget()
    except Exception:  # Redis away: the key expires by itself
        pass
