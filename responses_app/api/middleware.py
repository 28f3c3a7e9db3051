"""Under /v1, no HTML ever: uncaught exceptions and error pages become JSON errors; and a
query string holding a NUL character is refused before a view reads it."""
from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from ..create.nul import NUL_MESSAGE
from ..errors import InvalidRequest, error_response, render_exception


class ApiErrorMiddleware:
    """Renders exceptions escaping a /v1 view as OpenAI-shaped JSON (500 if unknown).

    A /v1 query parameter with a NUL character in its name or value gets the 400 a JSON
    body with one gets: Postgres text cannot hold one, so a cursor (`after`, `before`) or
    a filter (`purpose`, `model`, `metadata[...]`) holding it would fail in the database.
    (The stream views, asgi_front.py, skip the middleware: none of their parameters
    reaches the database.)"""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return _nul_in_query(request) or self.get_response(request)

    async def __acall__(self, request):
        return _nul_in_query(request) or await self.get_response(request)

    def process_exception(self, request, exception):
        if not request.path.startswith("/v1/"):
            return None
        return render_exception(exception, request)


def _nul_in_query(request):
    """The 400 for a /v1 query string holding a NUL character, or None."""
    if not request.path.startswith("/v1/"):
        return None
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return error_response(InvalidRequest(NUL_MESSAGE, param=name,
                                                 code="invalid_value"))
    return None
