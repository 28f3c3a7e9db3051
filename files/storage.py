"""Where file bytes live: Django's storage API under the alias `files` (settings.STORAGES;
a local directory by default, any django-storages backend by FILES_STORAGE_BACKEND)."""
from django.core.files.storage import storages


def file_storage():
    return storages["files"]


def read_bytes(storage_name: str) -> bytes:
    with file_storage().open(storage_name, "rb") as handle:
        return handle.read()
