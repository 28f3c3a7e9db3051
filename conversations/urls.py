"""Routes of the Conversations API under /v1 (included before responses_app's catch-all)."""
from django.urls import path

from responses_app import url_converters  # noqa: F401  (registers <id:...>)

from . import views

urlpatterns = [
    path("conversations", views.ConversationCreate.as_view()),
    path("conversations/<id:conversation_id>", views.ConversationDetail.as_view()),
    path("conversations/<id:conversation_id>/items", views.ConversationItems.as_view()),
    path("conversations/<id:conversation_id>/items/<id:item_id>",
         views.ConversationItemDetail.as_view()),
]
