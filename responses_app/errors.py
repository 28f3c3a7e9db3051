"""The one error type of the API (APIError: a status, an OpenAI error object, headers)
and its HTTP rendering.

Every error a client sees is `{"error": {"message", "type", "param", "code"}}` with the
right HTTP status, whether it was raised by our code, by DRF, by Django or by the upstream
(worker.upstream.UpstreamRejected, carried to the web on the bus: bus.entries.failure_entry).
Each transport renders it once: HTTP JSON here (error_response, for every view, the
middleware and the ASGI front), the WebSocket `error` event in api/framing.py. An SSE
stream has no error event of its own: an error before its first event is the HTTP answer,
and a run that fails after it ends with its `response.failed` event.
"""
import logging

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import JsonResponse
from rest_framework import exceptions as drf_exceptions

log = logging.getLogger(__name__)


class APIError(Exception):
    status = 400
    type = "invalid_request_error"
    code = None

    def __init__(self, message, *, param=None, code=None, status=None, type=None, headers=None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if type is not None:
            self.type = type
        self.headers = headers or {}

    @property
    def body(self) -> dict:
        """The OpenAI error object: `{"error": {"message", "type", "param", "code"}}`."""
        return error_body(self.message, self.type, self.param, self.code)

    @classmethod
    def of_body(cls, status: int, body: dict, headers: dict | None = None) -> "APIError":
        """The error that `status` and an OpenAI error `body` describe (the bus's form)."""
        error = body["error"]
        return cls(error.get("message"), param=error.get("param"), code=error.get("code"),
                   status=status, type=error.get("type"), headers=headers)


class InvalidRequest(APIError):
    pass


class AuthenticationError(APIError):
    status = 401
    code = "invalid_api_key"


class NotFound(APIError):
    status = 404
    code = "not_found"


class BodyTooLarge(APIError):
    status = 413
    code = "request_too_large"


class ServiceUnavailable(APIError):
    """A backing service unreachable, or the process overloaded: retry (after Retry-After)."""
    status = 503
    type = "server_error"
    code = "service_unavailable"

    def __init__(self, message, **kwargs):
        super().__init__(message, **kwargs)
        self.headers.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))


# What a 503 asks a client to wait before it retries: about how long the database or Redis
# takes to be found unreachable (DATABASE_WAIT_SECONDS, DATABASE_TCP_TIMEOUT_SECONDS).
RETRY_AFTER_SECONDS = 5


def database_did_not_answer() -> ServiceUnavailable:
    """What a request that waited DATABASE_WAIT_SECONDS for the database is answered (by
    the web, db_threads.py, or by the run that could not claim its response in that time,
    worker/run_abandon.py)."""
    from django.conf import settings

    return ServiceUnavailable(f"The database did not answer within "
                              f"{settings.DATABASE_WAIT_SECONDS:g} s; retry shortly.")


class ServerError(APIError):
    status = 500
    type = "server_error"
    code = "server_error"


# What a client is told of the gateway's own bug (a crashed run, an unhandled error): the
# message a failed response's error carries, and a 500's (a client waiting for the whole
# answer gets a crashed run's failure as a 500: api/relay.py)
CRASHED = "The server had an error while processing your request."


def error_body(message, type="invalid_request_error", param=None, code=None):
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_response(exc: APIError) -> JsonResponse:
    """The HTTP rendering of an error: its JSON body, status and headers."""
    response = JsonResponse(exc.body, status=exc.status)
    for name, value in exc.headers.items():
        response[name] = value
    if exc.status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response


def render_exception(exc: BaseException, request) -> JsonResponse:
    """The JSON answer to an exception a /v1 request raised (a 500 if it is unknown)."""
    api_error = as_api_error(exc)
    if api_error is None:
        log.exception("unhandled error on %s %s", request.method, request.path,
                      exc_info=exc)
        api_error = ServerError(CRASHED)
    elif api_error.status == 503:  # an outage, or an overload: say which
        log.warning("answered 503 on %s %s (%s): %r", request.method, request.path,
                    api_error.message, exc)
    return error_response(api_error)


def as_api_error(exc: BaseException) -> APIError | None:
    """Map exceptions raised by our code, DRF or Django to an APIError; None if unknown."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return BodyTooLarge("The request body is larger than this server accepts.")
    if isinstance(exc, SuspiciousOperation):  # a Host not in ALLOWED_HOSTS, and the like
        return InvalidRequest("Bad request (check the Host header).", code="bad_request")
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return AuthenticationError(_detail(exc) or "Missing or invalid API key.")
    if isinstance(exc, drf_exceptions.ParseError):
        return InvalidRequest(f"The body is not valid JSON: {_detail(exc)}", code="invalid_json")
    if isinstance(exc, drf_exceptions.NotFound):
        return NotFound(_detail(exc) or "Not found.")
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return APIError(_detail(exc), status=405, code="method_not_allowed")
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return APIError(_detail(exc), status=415, code="unsupported_media_type")
    if isinstance(exc, drf_exceptions.ValidationError):
        return InvalidRequest(str(exc.detail))
    if isinstance(exc, drf_exceptions.APIException):
        return APIError(_detail(exc), status=exc.status_code, code=exc.default_code)
    if is_backing_service_outage(exc):
        return ServiceUnavailable("A backing service (database or message broker) is "
                                  "unavailable; retry shortly.")
    return None


def is_backing_service_outage(exc: BaseException) -> bool:
    """The database, Redis or the broker unreachable: a 503 to retry, not a 500 bug (a
    worker retries storing a result through one: worker/run_store.py)."""
    from django.db import InterfaceError as DbInterfaceError
    from django.db import OperationalError as DbOperationalError
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from psycopg import InterfaceError as PgInterfaceError
    from psycopg import OperationalError as PgOperationalError  # the event loops' pools too
    from psycopg.errors import ReadOnlySqlTransaction  # a read-only (standby) database

    # (OperationalError covers a statement timeout, a full disk and a server shutting down)
    outages = (DbOperationalError, DbInterfaceError, PgOperationalError, PgInterfaceError,
               ReadOnlySqlTransaction, BrokerError, RedisConnectionError, RedisTimeoutError)
    while exc is not None:
        if isinstance(exc, outages) or (isinstance(exc, APIError) and exc.status == 503):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _detail(exc) -> str:
    detail = getattr(exc, "detail", None)
    return str(detail) if detail is not None else str(exc)


def drf_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: render every DRF and API error in our shape."""
    if as_api_error(exc) is None:
        return None  # unknown: re-raised, then rendered as a 500 by ApiErrorMiddleware
    return render_exception(exc, context["request"])
