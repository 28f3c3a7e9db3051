"""Operational routes, outside /v1 and without authentication."""
from django.urls import path

from . import views

urlpatterns = [
    path("healthz", views.healthz),
    path("readyz", views.readyz),
    path("metrics", views.metrics),
]
