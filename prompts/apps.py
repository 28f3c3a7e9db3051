"""App config for stored prompt templates (`prompt: {id, version, variables}`)."""
from django.apps import AppConfig


class PromptsConfig(AppConfig):
    name = "prompts"
    verbose_name = "Prompt templates"
