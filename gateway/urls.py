"""Top-level routes: the /v1 API and the admin."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("v1/", include("responses_app.urls")),
    path("admin/", admin.site.urls),
]
