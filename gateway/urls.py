"""Top-level routes: the /v1 API, its OpenAPI document and the admin."""
from django.contrib import admin
from django.urls import include, path

from api_schema.views import OpenApiDocument

urlpatterns = [
    path("v1/openapi.json", OpenApiDocument.as_view()),
    path("v1/", include("responses_app.urls")),
    path("admin/", admin.site.urls),
]
