"""Routes of the Chat Completions API under /v1 (gateway/urls.py includes them before the
Responses API's catch-all)."""
from django.urls import path

from responses_app import url_converters  # noqa: F401  (registers <id:...>)

from . import views

urlpatterns = [
    path("chat/completions", views.chat_completion_collection),
    path("chat/completions/<id:completion_id>", views.ChatCompletionDetail.as_view()),
    path("chat/completions/<id:completion_id>/messages",
         views.ChatCompletionMessages.as_view()),
]
