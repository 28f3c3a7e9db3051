"""The dashboard page (the admin's index): reads the window and tenant from the query
string, asks the selectors and the live state, draws the charts; nothing else."""
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from responses_app.models import Tenant

from . import charts
from .live import RECENT, now_state
from .selectors import dashboard
from .windows import WINDOWS, window

STATUS_SERIES = (("completed", "s-completed"), ("failed", "s-failed"),
                 ("incomplete", "s-incomplete"), ("cancelled", "s-cancelled"),
                 ("running", "s-running"))


def _tenant(request) -> Tenant | None:
    raw = request.GET.get("tenant", "")
    return Tenant.objects.filter(pk=int(raw)).first() if raw.isdigit() else None


def _label(moment, unit: str) -> str:
    return moment.strftime({"minute": "%H:%M", "hour": "%H:%M", "day": "%m-%d"}[unit])


def _list_link(data, **filters) -> str:
    """The response list filtered to this window's days, this tenant and `filters`."""
    query = {"created_from": data.window.since.date().isoformat(), **filters}
    if data.tenant_id is not None:
        query["tenant"] = data.tenant_id
    return reverse("admin:responses_app_storedresponse_changelist") + "?" + urlencode(query)


def dashboard_page(site, request):
    now = timezone.now()
    tenant = _tenant(request)
    tenant_id = tenant.pk if tenant else None
    data = dashboard(window(request.GET.get("window", ""), now), tenant_id)
    unit = data.window.unit
    labels = [_label(bucket, unit) for bucket in data.window.buckets]
    for row in data.errors:
        row["link"] = _list_link(data, error_code=row["error_code"])
    for row in data.top_tenants:
        row["link"] = _list_link(data, tenant=row["tenant_id"])
    for row in data.top_models:
        row["link"] = _list_link(data, model=row["model"])
    first = [row.first_delta for row in data.latency]
    total = [row.total for row in data.latency]
    context = {
        **site.each_context(request), "title": "Dashboard", "data": data, "tenant": tenant,
        "tenants": Tenant.objects.order_by("name").only("pk", "name"),
        "windows": [(name, spec[0]) for name, spec in WINDOWS.items()],
        "now": now_state(now, tenant_id), "recent_minutes": int(RECENT.total_seconds() // 60),
        "generated_at": now, "bucket_label": {"minute": "minute", "hour": "hour",
                                              "day": "day"}[unit],
        "requests_chart": charts.stacked_bars(
            "Responses by status", labels,
            [(name, css, [row[name] for row in data.requests]) for name, css in STATUS_SERIES]),
        "tokens_chart": charts.lines("Tokens", labels, [
            ("input tokens", "l-input", [row["input"] for row in data.tokens]),
            ("output tokens", "l-output", [row["output"] for row in data.tokens])]),
        "first_delta_chart": charts.lines("Time to first delta", labels, [
            (f"p{p}", f"l-p{p}", [values[i] for values in first])
            for i, p in enumerate((50, 95, 99))], unit=" ms"),
        "total_chart": charts.lines("Total latency", labels, [
            (f"p{p}", f"l-p{p}", [values[i] for values in total])
            for i, p in enumerate((50, 95, 99))], unit=" ms"),
        "errors_link": _list_link(data, has_error="yes"),
        "app_list": site.get_app_list(request),
    }
    request.current_app = site.name
    return TemplateResponse(request, "dashboard/index.html", context)
