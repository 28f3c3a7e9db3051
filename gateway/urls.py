"""Top-level routes: the /v1 API, its OpenAPI document, usage, the operational probes and
metrics, the admin (its site: dashboard/site.py)."""
from django.contrib import admin
from django.urls import include, path

from accounting.views import UsageView
from api_schema.views import OpenApiDocument

urlpatterns = [
    path("v1/openapi.json", OpenApiDocument.as_view()),
    path("v1/usage", UsageView.as_view()),
    path("v1/", include("conversations.urls")),
    path("v1/", include("files.urls")),
    path("v1/", include("vector_stores.urls")),
    path("v1/", include("chat_completions.urls")),
    # last under /v1: its final route is the catch-all JSON 404
    path("v1/", include("responses_app.api.urls")),
    path("", include("observability.urls")),
    path("admin/", admin.site.urls),
]

# No HTML under /v1, even for errors raised before a view runs.
handler400 = "responses_app.api.views.bad_request"
handler404 = "responses_app.api.views.page_not_found"
handler500 = "responses_app.api.views.server_error"
