"""A search backend saved or deleted in this process is seen by its next request (other
processes pick it up within WEB_SEARCH_BACKENDS_CACHE_SECONDS); so is a changed WEB_SEARCH_*
setting (tests change settings)."""
from django.core.signals import setting_changed
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .backend_table import forget_backends
from .models import WebSearchBackend


@receiver([post_save, post_delete], sender=WebSearchBackend)
def backend_changed(**kwargs):
    forget_backends()


@receiver(setting_changed)
def search_setting_changed(setting, **kwargs):
    if setting.startswith("WEB_SEARCH_"):
        forget_backends()
