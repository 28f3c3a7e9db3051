"""A route saved or deleted in this process is seen by its next request (other processes
pick it up within UPSTREAM_ROUTES_CACHE_SECONDS)."""
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import UpstreamRoute
from .routing import forget_routes


@receiver([post_save, post_delete], sender=UpstreamRoute)
def route_changed(**kwargs):
    forget_routes()
