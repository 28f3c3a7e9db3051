"""`GET /v1/usage?start=YYYY-MM-DD&end=YYYY-MM-DD`: the tenant's own daily usage."""
from datetime import date, datetime, timedelta, timezone

from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.errors import InvalidRequest

from .usage import usage_page

MAX_DAYS = 366
DEFAULT_DAYS = 7


class UsageView(APIView):
    def get(self, request):
        today = datetime.now(timezone.utc).date()
        end = _date(request.query_params, "end", today + timedelta(days=1))
        # the week before `end`, or what the calendar has of it (an `end` in year 1)
        week = timedelta(days=min(DEFAULT_DAYS, (end - date.min).days))
        start = _date(request.query_params, "start", end - week)
        if not start < end:
            raise InvalidRequest("'start' must be before 'end'.", param="start",
                                 code="invalid_value")
        if (end - start).days > MAX_DAYS:
            raise InvalidRequest(f"At most {MAX_DAYS} days per request.", param="end",
                                 code="invalid_value")
        return Response(usage_page(request.user.tenant.id, start, end))


def _date(query, name: str, default: date) -> date:
    value = query.get(name)
    if value is None:
        return default
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(f"'{name}' must be a date (YYYY-MM-DD).", param=name,
                             code="invalid_value") from None
