"""The `<id:...>` path converter every /v1 URLconf uses (registered on import)."""
from django.urls import register_converter


class IdConverter:
    """An id in a path: any characters but '/' and NUL (which no stored id holds and
    Postgres refuses in a query), so a NUL id is a 404, not a database error."""

    regex = r"[^/\x00]+"

    def to_python(self, value):
        return value

    def to_url(self, value):
        return value


register_converter(IdConverter, "id")
