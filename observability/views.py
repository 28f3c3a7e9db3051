"""`/healthz` (the process answers), `/readyz` (it can serve), `/metrics` (Prometheus)."""
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from .health import readiness
from .metrics import exposition


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request):
    report = readiness()
    return JsonResponse(report, status=200 if report["status"] == "ready" else 503)


@require_GET
def metrics(request):
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)
