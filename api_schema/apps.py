"""App config for the OpenAPI document of the /v1 API (/v1/openapi.json)."""
from django.apps import AppConfig


class ApiSchemaConfig(AppConfig):
    name = "api_schema"
    verbose_name = "API schema"

    def ready(self):
        from . import extensions  # noqa: F401  (registers the drf-spectacular extensions)
