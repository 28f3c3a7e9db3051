"""Routes of the Vector Stores API and of /v1/embeddings (before responses_app's catch-all)."""
from django.urls import path

from responses_app import url_converters  # noqa: F401  (registers <id:...>)

from . import views

STORE = "vector_stores/<id:store_id>"
BATCH = f"{STORE}/file_batches/<id:batch_id>"

urlpatterns = [
    path("embeddings", views.Embeddings.as_view()),
    path("vector_stores", views.StoreList.as_view()),
    path(STORE, views.StoreDetail.as_view()),
    path(f"{STORE}/search", views.StoreSearch.as_view()),
    path(f"{STORE}/files", views.StoreFileList.as_view()),
    path(f"{STORE}/files/<id:file_id>", views.StoreFileDetail.as_view()),
    path(f"{STORE}/files/<id:file_id>/content", views.StoreFileContent.as_view()),
    path(f"{STORE}/file_batches", views.BatchCreate.as_view()),
    path(BATCH, views.BatchDetail.as_view()),
    path(f"{BATCH}/cancel", views.BatchCancel.as_view()),
    path(f"{BATCH}/files", views.BatchFiles.as_view()),
]
