"""`POST /v1/embeddings` for tenants: the request checked, passed to the upstream route of
its `model` (upstreams.routing) as it is, the upstream's answer returned; its input tokens
added to the tenant's daily usage (accounting.usage's rollup, one request)."""
from datetime import datetime, timezone

from django.db import connection

from accounting.models import DailyUsage
from accounting.usage import UPSERT_DAILY_SQL
from responses_app.create.fields import checked_model_length
from responses_app.errors import APIError, InvalidRequest

from .embedding import EmbeddingFailed, client_for, embedding_route, post_embeddings

FIELDS = {"model", "input", "encoding_format", "dimensions", "user"}
MAX_INPUTS = 2048


class UpstreamFailed(APIError):
    status = 502
    type = "server_error"
    code = "upstream_error"


def check_request(data) -> dict:
    if not isinstance(data, dict):
        raise InvalidRequest("The body must be a JSON object.", code="invalid_type")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise InvalidRequest(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0],
                             code="unknown_parameter")
    if not isinstance(data.get("model"), str) or not data["model"]:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model",
                             code="missing_required_parameter")
    checked_model_length(data["model"])
    if not _valid_input(data.get("input")):
        raise InvalidRequest(f"'input' must be a non-empty string, an array of at most "
                             f"{MAX_INPUTS} non-empty strings, or token arrays.", param="input",
                             code="invalid_value")
    if data.get("encoding_format", "float") not in ("float", "base64"):
        raise InvalidRequest("'encoding_format' must be 'float' or 'base64'.",
                             param="encoding_format", code="invalid_value")
    dimensions = data.get("dimensions")
    if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
        raise InvalidRequest("'dimensions' must be a positive integer.", param="dimensions",
                             code="invalid_value")
    return data


def _valid_input(value) -> bool:
    if isinstance(value, str):
        return bool(value)
    if not isinstance(value, list) or not value or len(value) > MAX_INPUTS:
        return False
    if all(isinstance(item, str) and item for item in value):
        return True
    if all(type(item) is int for item in value):
        return True
    return all(isinstance(item, list) and item and all(type(t) is int for t in item)
               for item in value)


def embeddings_create(tenant_id: int, data) -> dict:
    body = check_request(data)
    route = embedding_route(body["model"])
    try:
        reply = post_embeddings(route, body, client_for(route))
    except EmbeddingFailed as exc:
        raise UpstreamFailed(str(exc))
    if reply.status_code != 200:
        if 400 <= reply.status_code < 500 and reply.status_code != 429:
            raise APIError(_message(reply), status=reply.status_code,
                           code="upstream_rejected")
        raise UpstreamFailed(f"The upstream answered {reply.status_code}: {_message(reply)}")
    try:
        answer = reply.json()
        answer["data"]
    except (ValueError, KeyError, TypeError):
        raise UpstreamFailed("The upstream answered no embeddings list.")
    _count_usage(tenant_id, body["model"], answer.get("usage") or {})
    return answer


def _message(reply) -> str:
    try:
        return str(reply.json()["error"]["message"])[:500]
    except (ValueError, KeyError, TypeError):
        return reply.text[:500]


def _count_usage(tenant_id: int, model: str, usage: dict) -> None:
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    tokens = tokens if type(tokens) is int and tokens >= 0 else 0
    today = datetime.now(timezone.utc).date()
    with connection.cursor() as cursor:
        cursor.execute(UPSERT_DAILY_SQL.format(table=DailyUsage._meta.db_table),
                       [tenant_id, connection.ops.adapt_datefield_value(today), model,
                        tokens, 0, 0, 0])
