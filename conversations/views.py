"""The /v1/conversations endpoints (DRF). Thin: call a service or selector, render."""
from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.paging import page_params

from . import selectors, services


class ConversationCreate(APIView):
    def post(self, request):
        return Response(services.conversation_create(request.user.tenant, request.data))


class ConversationDetail(APIView):
    def get(self, request, conversation_id):
        return Response(selectors.conversation_get(request.user.tenant, conversation_id))

    def post(self, request, conversation_id):
        return Response(services.conversation_update(
            request.user.tenant, conversation_id, request.data))

    def delete(self, request, conversation_id):
        return Response(services.conversation_delete(request.user.tenant, conversation_id))


class ConversationItems(APIView):
    def get(self, request, conversation_id):
        return Response(selectors.items_page(
            request.user.tenant, conversation_id, page_params(request.query_params)))

    def post(self, request, conversation_id):
        return Response(services.items_add(request.user.tenant, conversation_id, request.data))


class ConversationItemDetail(APIView):
    def get(self, request, conversation_id, item_id):
        return Response(selectors.item_get(request.user.tenant, conversation_id, item_id))

    def delete(self, request, conversation_id, item_id):
        return Response(services.item_delete(request.user.tenant, conversation_id, item_id))
