"""App config for the Vector Stores API, its ingestion and its search."""
from django.apps import AppConfig


class VectorStoresConfig(AppConfig):
    name = "vector_stores"
    verbose_name = "Vector stores"
