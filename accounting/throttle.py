"""The DRF hook of the limits: every authenticated DRF request is admitted (one request)."""
from rest_framework.throttling import BaseThrottle

from observability.http import add_response_headers

from . import ratelimit


class RateLimitThrottle(BaseThrottle):
    """Counts the request against its key and tenant; refusals raise the 429 themselves."""

    def allow_request(self, request, view):
        if getattr(request.user, "tenant", None) is None:  # a public view (the API schema)
            return True
        admission = ratelimit.admit(request.user)
        add_response_headers(request, admission.headers)
        return True
