"""Routes under /v1; anything else under /v1 is a JSON 404."""
from django.urls import path, re_path, register_converter

from . import conversation_views, views


class IdConverter:
    """An id in a path: any characters but '/' and NUL (which no stored id holds and
    Postgres refuses in a query), so a NUL id is a 404, not a database error."""

    regex = r"[^/\x00]+"

    def to_python(self, value):
        return value

    def to_url(self, value):
        return value


register_converter(IdConverter, "id")

urlpatterns = [
    path("responses", views.create_response),
    path("responses/compact", views.not_found),
    path("responses/<id:response_id>", views.ResponseDetail.as_view()),
    path("responses/<id:response_id>/input_items", views.ResponseInputItems.as_view()),
    path("responses/<id:response_id>/cancel", views.ResponseCancel.as_view()),
    path("models", views.ModelList.as_view()),
    path("conversations", conversation_views.ConversationCreate.as_view()),
    path("conversations/<id:conversation_id>", conversation_views.ConversationDetail.as_view()),
    path("conversations/<id:conversation_id>/items",
         conversation_views.ConversationItems.as_view()),
    path("conversations/<id:conversation_id>/items/<id:item_id>",
         conversation_views.ConversationItemDetail.as_view()),
    re_path(r"^.*$", views.not_found),
]
