"""The /v1/vector_stores and /v1/embeddings endpoints (DRF). Thin: call a service, a
selector or the search, render."""
from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.errors import InvalidRequest

from . import selectors, services
from .embeddings_api import UpstreamFailed, embeddings_create
from .search import (EmbeddingFailed, InvalidSearchRequest, VectorStoreNotFound,
                     search_stores)

SEARCH_FIELDS = {"query", "filters", "max_num_results", "ranking_options", "rewrite_query"}


class StoreList(APIView):
    def get(self, request):
        return Response(selectors.stores_page(request.user.tenant, request.query_params))

    def post(self, request):
        return Response(services.store_create(request.user.tenant, request.data))


class StoreDetail(APIView):
    def get(self, request, store_id):
        return Response(selectors.store_get(request.user.tenant, store_id))

    def post(self, request, store_id):
        return Response(services.store_update(request.user.tenant, store_id, request.data))

    def delete(self, request, store_id):
        return Response(services.store_delete(request.user.tenant, store_id))


class StoreFileList(APIView):
    def get(self, request, store_id):
        return Response(selectors.store_files_page(request.user.tenant, store_id,
                                                   request.query_params))

    def post(self, request, store_id):
        return Response(services.store_file_create(request.user.tenant, store_id,
                                                   request.data))


class StoreFileDetail(APIView):
    def get(self, request, store_id, file_id):
        body = selectors.store_file_get(request.user.tenant, store_id, file_id)
        return Response(body, headers={"openai-poll-after-ms": selectors.POLL_AFTER_MS})

    def post(self, request, store_id, file_id):
        return Response(services.store_file_update(request.user.tenant, store_id, file_id,
                                                   request.data))

    def delete(self, request, store_id, file_id):
        return Response(services.store_file_delete(request.user.tenant, store_id, file_id))


class StoreFileContent(APIView):
    def get(self, request, store_id, file_id):
        return Response(selectors.store_file_content(request.user.tenant, store_id, file_id))


class BatchCreate(APIView):
    def post(self, request, store_id):
        return Response(services.batch_create(request.user.tenant, store_id, request.data))


class BatchDetail(APIView):
    def get(self, request, store_id, batch_id):
        body = selectors.batch_get(request.user.tenant, store_id, batch_id)
        return Response(body, headers={"openai-poll-after-ms": selectors.POLL_AFTER_MS})


class BatchCancel(APIView):
    def post(self, request, store_id, batch_id):
        return Response(services.batch_cancel(request.user.tenant, store_id, batch_id))


class BatchFiles(APIView):
    def get(self, request, store_id, batch_id):
        return Response(selectors.store_files_page(request.user.tenant, store_id,
                                                   request.query_params, batch_id))


class StoreSearch(APIView):
    def post(self, request, store_id):
        data = request.data
        if not isinstance(data, dict):
            raise InvalidRequest("The body must be a JSON object.", code="invalid_type")
        unknown = sorted(set(data) - SEARCH_FIELDS)
        if unknown:
            raise InvalidRequest(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0],
                                 code="unknown_parameter")
        query = data.get("query")
        if isinstance(query, list) and query and all(isinstance(q, str) for q in query):
            query = " ".join(query)
        try:
            results = search_stores(
                request.user.tenant.id, [store_id], query,
                max_num_results=data.get("max_num_results", 10), filters=data.get("filters"),
                ranking_options=data.get("ranking_options"))
        except VectorStoreNotFound as exc:
            raise selectors.store_not_found(exc.store_id)
        except InvalidSearchRequest as exc:
            raise InvalidRequest(str(exc), code="invalid_value")
        except EmbeddingFailed as exc:
            raise UpstreamFailed(str(exc))
        return Response({
            "object": "vector_store.search_results.page",
            "search_query": data.get("query") if isinstance(data.get("query"), list)
            else [query],
            "data": [{"file_id": r.file_id, "filename": r.filename, "score": r.score,
                      "attributes": r.attributes, "content": r.content} for r in results],
            "has_more": False, "next_page": None,
        })


class Embeddings(APIView):
    def post(self, request):
        return Response(embeddings_create(request.user.tenant.id, request.data))


