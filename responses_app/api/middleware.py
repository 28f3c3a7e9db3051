"""Under /v1, no HTML ever: uncaught exceptions and error pages become JSON errors."""
from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from ..errors import render_exception


class ApiErrorMiddleware:
    """Renders exceptions escaping a /v1 view as OpenAI-shaped JSON (500 if unknown)."""

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
        return self.get_response(request)

    async def __acall__(self, request):
        return await self.get_response(request)

    def process_exception(self, request, exception):
        if not request.path.startswith("/v1/"):
            return None
        return render_exception(exception, request)

