"""App config for the Files API."""
from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"
    verbose_name = "Files"
