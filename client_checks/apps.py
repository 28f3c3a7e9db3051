"""App config for the client compatibility checks (it only brings the management command)."""
from django.apps import AppConfig


class ClientChecksConfig(AppConfig):
    name = "client_checks"
    verbose_name = "Client compatibility checks"
