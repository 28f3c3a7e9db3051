"""Routes under /v1; anything else under /v1 is a JSON 404."""
from django.urls import path, re_path

from . import conversation_views, views

urlpatterns = [
    path("responses", views.create_response),
    path("responses/compact", views.not_found),
    path("responses/<str:response_id>", views.ResponseDetail.as_view()),
    path("responses/<str:response_id>/input_items", views.ResponseInputItems.as_view()),
    path("responses/<str:response_id>/cancel", views.ResponseCancel.as_view()),
    path("models", views.ModelList.as_view()),
    path("conversations", conversation_views.ConversationCreate.as_view()),
    path("conversations/<str:conversation_id>", conversation_views.ConversationDetail.as_view()),
    path("conversations/<str:conversation_id>/items",
         conversation_views.ConversationItems.as_view()),
    path("conversations/<str:conversation_id>/items/<str:item_id>",
         conversation_views.ConversationItemDetail.as_view()),
    re_path(r"^.*$", views.not_found),
]
