"""Routes under /v1; anything else under /v1 is a JSON 404."""
from django.urls import path, re_path

from . import views

urlpatterns = [
    path("responses", views.create_response),
    path("responses/compact", views.not_found),
    path("responses/<str:response_id>", views.ResponseDetail.as_view()),
    path("responses/<str:response_id>/input_items", views.ResponseInputItems.as_view()),
    path("responses/<str:response_id>/cancel", views.ResponseCancel.as_view()),
    path("models", views.ModelList.as_view()),
    re_path(r"^.*$", views.not_found),
]
