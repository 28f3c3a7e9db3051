"""Under /v1, no HTML ever: uncaught exceptions and error pages become JSON errors."""
import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from .errors import ServerError, as_api_error, error_response

log = logging.getLogger(__name__)


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
        api_error = as_api_error(exception)
        if api_error is None:
            log.exception("unhandled error on %s %s", request.method, request.path)
            api_error = ServerError("The server had an error while processing your request.")
        return error_response(api_error)

