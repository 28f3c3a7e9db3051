"""Log records as one JSON object per line (or plain text), each with its request id.

Imported by the settings module: no Django imports here."""


def logging_config(level: str, library_level: str, json: bool) -> dict:
    """The LOGGING setting: our loggers at `level`, libraries at `library_level`."""
    formatter = {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
    } if json else {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "observability.request_context.RequestIdFilter"}},
        "formatters": {"default": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default",
                                 "filters": ["request_id"]}},
        "root": {"handlers": ["console"], "level": library_level},
        "loggers": {name: {"level": level}
                    for name in ("responses_app", "mcp_tools", "accounting", "observability",
                                 "gateway")},
    }

