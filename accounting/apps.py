"""App config for limits, quotas and usage accounting."""
from django.apps import AppConfig


class AccountingConfig(AppConfig):
    name = "accounting"
    verbose_name = "Limits and usage"
    default_auto_field = "django.db.models.BigAutoField"
