"""The browser's admin views: each checks the admin permission, reads through a selector of
this package and renders a template of `templates/browser/`. Wired up in `admin.py`."""
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from ..models import StoredResponse, Tenant
from .events import stored_events
from .listing import ResponseFilterForm, response_page
from .timeline import response_timeline
from .usage import tenant_usage

USAGE_DAYS_DEFAULT = 30
USAGE_DAYS_MAX = 366


def _context(model_admin, request, title: str, **extra) -> dict:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    return {**model_admin.admin_site.each_context(request), "opts": model_admin.model._meta,
            "title": title, **extra}


def response_list(model_admin, request):
    context = _context(model_admin, request, "Responses")
    form = ResponseFilterForm(request.GET or None)
    rows, next_query = [], None
    if not form.is_bound or form.is_valid():
        filters = form.cleaned_data if form.is_bound else {}
        rows, cursor = response_page(filters)
        if cursor is not None:
            params = request.GET.copy()
            params["before"] = cursor
            next_query = params.urlencode()
    return TemplateResponse(request, "browser/response_list.html", {
        **context, "form": form, "rows": rows, "next_query": next_query,
        "first_page": not request.GET.get("before"),
    })


def response_detail(model_admin, request, response_id: str):
    context = _context(model_admin, request, f"Response {response_id}")
    response = get_object_or_404(StoredResponse.objects.select_related("tenant"), id=response_id)
    timeline = response_timeline(response)
    current = next(turn for turn in timeline.turns if turn.is_current)
    return TemplateResponse(request, "browser/response_detail.html", {
        **context, "response": response, "timeline": timeline, "current": current,
    })


def response_events(model_admin, request, response_id: str):
    context = _context(model_admin, request, f"Events of {response_id}")
    response = get_object_or_404(
        StoredResponse.objects.only("id", "status", "model", "created_at"), id=response_id)
    return TemplateResponse(request, "browser/response_events.html", {
        **context, "response": response, "log": stored_events(response.id),
    })


def usage_of_tenant(model_admin, request, tenant_id: int):
    context = _context(model_admin, request, "Usage")
    tenant = get_object_or_404(Tenant, pk=tenant_id)
    context["title"] = f"Usage of {tenant.name}"
    try:
        days = min(max(int(request.GET.get("days", USAGE_DAYS_DEFAULT)), 1), USAGE_DAYS_MAX)
    except ValueError:
        days = USAGE_DAYS_DEFAULT
    return TemplateResponse(request, "browser/tenant_usage.html", {
        **context, "tenant": tenant, "usage": tenant_usage(tenant, days),
        "day_choices": (7, 30, 90, 365),
    })
