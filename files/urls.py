"""Routes of the Files API under /v1 (included before responses_app's catch-all)."""
from django.urls import path

from responses_app import url_converters  # noqa: F401  (registers <id:...>)

from . import views

urlpatterns = [
    path("files", views.FileList.as_view()),
    path("files/<id:file_id>", views.FileDetail.as_view()),
    path("files/<id:file_id>/content", views.FileContent.as_view()),
]
