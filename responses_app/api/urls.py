"""Routes of the Responses API under /v1, and the catch-all: anything else under /v1 that no
earlier URLconf matched (gateway/urls.py includes the others first) is a JSON 404."""
from django.urls import path, re_path

from .. import url_converters  # noqa: F401  (registers <id:...>)
from . import stream_views, views

urlpatterns = [
    path("responses", stream_views.CREATE.django_view),
    path("responses/compact", views.ResponseCompact.as_view()),
    path("responses/input_tokens", views.ResponseInputTokens.as_view()),
    path("responses/<id:response_id>", stream_views.RESUME.django_view),
    path("responses/<id:response_id>/input_items", views.ResponseInputItems.as_view()),
    path("responses/<id:response_id>/cancel", views.ResponseCancel.as_view()),
    path("models", views.ModelList.as_view()),
    re_path(r"^.*$", views.not_found),
]
