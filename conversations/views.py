"""The /v1/conversations endpoints (DRF). Thin: call the conversations service, render."""
from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.paging import page_params

from . import services as conversations


class ConversationCreate(APIView):
    def post(self, request):
        return Response(conversations.conversation_create(request.user.tenant, request.data))


class ConversationDetail(APIView):
    def get(self, request, conversation_id):
        return Response(conversations.conversation_get(request.user.tenant, conversation_id))

    def post(self, request, conversation_id):
        return Response(conversations.conversation_update(
            request.user.tenant, conversation_id, request.data))

    def delete(self, request, conversation_id):
        return Response(conversations.conversation_delete(request.user.tenant, conversation_id))


class ConversationItems(APIView):
    def get(self, request, conversation_id):
        return Response(conversations.items_page(
            request.user.tenant, conversation_id, page_params(request.query_params)))

    def post(self, request, conversation_id):
        return Response(conversations.items_add(
            request.user.tenant, conversation_id, request.data))


class ConversationItemDetail(APIView):
    def get(self, request, conversation_id, item_id):
        return Response(conversations.item_get(request.user.tenant, conversation_id, item_id))

    def delete(self, request, conversation_id, item_id):
        return Response(conversations.item_delete(request.user.tenant, conversation_id, item_id))
