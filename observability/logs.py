"""Log records as one JSON object per line (or plain text), each with its request id, and
with its trace id when tracing is on (observability/tracing.py).

Imported by the settings module: no Django imports here."""


def logging_config(level: str, library_level: str, json: bool, trace_ids: bool = False) -> dict:
    """The LOGGING setting: our loggers at `level`, libraries at `library_level`."""
    ids = "%(request_id)s %(trace_id)s" if trace_ids else "%(request_id)s"
    formatter = {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s " + ids,
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
    } if json else {"format": f"%(asctime)s %(levelname)s %(name)s [{ids}] %(message)s"}
    filters = {"request_id": {"()": "observability.request_context.RequestIdFilter"}}
    if trace_ids:
        filters["trace_id"] = {"()": "observability.tracing.TraceIdFilter"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": filters,
        "formatters": {"default": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default",
                                 "filters": list(filters)}},
        "root": {"handlers": ["console"], "level": library_level},
        "loggers": {name: {"level": level}
                    for name in ("responses_app", "mcp_tools", "accounting", "observability",
                                 "upstreams", "gateway", "vector_stores")},
    }

