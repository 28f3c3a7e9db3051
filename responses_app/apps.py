"""App config for the Responses API: process-wide runtime tuning at start-up."""
import gc

from django.apps import AppConfig
from django.conf import settings


class ResponsesAppConfig(AppConfig):
    name = "responses_app"
    verbose_name = "Responses"

    def ready(self):
        # Streaming allocates many short-lived dicts: with the default thresholds the cyclic
        # collector ran every few hundred events and scanned the whole Django/Celery heap,
        # a fifth of the worker's CPU. Objects alive at start-up are frozen out of its scans.
        gen0, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(settings.GC_GEN0_THRESHOLD, gen1, gen2)
        gc.freeze()
