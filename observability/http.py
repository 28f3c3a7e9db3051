"""Observing one HTTP exchange: request id, access log line, request counter.

Every request goes through begin_exchange and finish_exchange: from the Django middleware
below, or from the ASGI front of the streaming views (responses_app/api/asgi_front.py).
"""
import logging
import time

from asgiref.sync import iscoroutinefunction
from django.utils.decorators import sync_and_async_middleware

from .metrics import HTTP_REQUESTS
from .request_context import HEADER, bind_request_id, request_id_from

access_log = logging.getLogger("gateway.access")


class Exchange:
    """One request being served: its id, and what to report when it is answered."""

    def __init__(self, method: str, client_request_id: str | None):
        self.method = method
        self.request_id = request_id_from(client_request_id)
        self.started = time.perf_counter()
        # headers every answer gets (services add theirs, e.g. the rate limits)
        self.headers = {HEADER: self.request_id}
        bind_request_id(self.request_id)

    def answered(self, route: str, path: str, status: int) -> None:
        HTTP_REQUESTS.labels(route, self.method, str(status)).inc()
        if access_log.isEnabledFor(logging.INFO):
            access_log.info("%s %s %s", self.method, path, status, extra={
                "method": self.method, "path": path, "status": status,
                "duration_ms": round((time.perf_counter() - self.started) * 1000, 2)})


def add_response_headers(request, headers: dict) -> None:
    """Headers for the answer to this Django (or DRF) request, whatever it turns out to be."""
    request = getattr(request, "_request", request)
    exchange = getattr(request, "exchange", None)
    if exchange is not None:
        exchange.headers.update(headers)


def begin_exchange(request) -> Exchange:
    """Start observing a Django request (request.exchange), whichever front serves it."""
    request.exchange = Exchange(request.method, request.headers.get(HEADER))
    return request.exchange


def finish_exchange(request, response, exchange: Exchange):
    """The response with the exchange's headers; the request counted and logged."""
    for name, value in exchange.headers.items():
        response[name] = value
    match = request.resolver_match
    exchange.answered(match.route if match else "unmatched", request.path,
                      response.status_code)
    return response


@sync_and_async_middleware
def exchange_middleware(get_response):
    """Django middleware: request id in and out, headers added by services, metrics, log."""

    if iscoroutinefunction(get_response):
        async def middleware(request):
            exchange = begin_exchange(request)
            return finish_exchange(request, await get_response(request), exchange)
    else:
        def middleware(request):
            exchange = begin_exchange(request)
            return finish_exchange(request, get_response(request), exchange)
    return middleware
