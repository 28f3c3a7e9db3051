"""Running one `file_search` call: the request's tool (its vector stores, `max_num_results`,
`filters`, `ranking_options`) searched for each query in the tenant's stores through the
vector stores app's search service (`vector_stores.search.search_stores`, a blocking call
run on a thread), results of several queries merged by best score. A store that is not the
tenant's (unknown, deleted, another tenant's: all the same), a query the embedding upstream
could not embed, or search options it refuses fail the call with a message the model is
told; the response goes on.
"""
import asyncio

from responses_app.db_threads import on_pooled_connection
from responses_app.translation.hosted_items import FileResult

DEFAULT_MAX_RESULTS = 10
TEXT_CHARS = 4000  # of each result's text given to the model and kept in the item


class FileSearchFailed(Exception):
    """A search that did not give results; the message says why (the model is told)."""


async def search_files(tenant_id: int, tool: dict, queries: list[str]) -> list[FileResult]:
    """The best results over the queries (FileSearchFailed when a store is not found)."""
    # on a thread of asyncio's default executor, its connection handed back after the search
    # (the thread lives on idle; a connection kept would hold a pool slot for nothing)
    # imported here: the vector stores app is optional (catalog.file_search_available)
    from vector_stores.search import (EmbeddingFailed, InvalidSearchRequest,
                                      VectorStoreNotFound, search_stores)

    limit = tool.get("max_num_results") or DEFAULT_MAX_RESULTS
    found: dict[tuple, FileResult] = {}
    for query in queries:
        try:
            results = await asyncio.to_thread(
                on_pooled_connection, search_stores, tenant_id, tool["vector_store_ids"], query,
                max_num_results=limit, filters=tool.get("filters"),
                ranking_options=tool.get("ranking_options"))
        except VectorStoreNotFound as missing:
            raise FileSearchFailed(f"vector store '{missing.store_id}' not found") from None
        except (EmbeddingFailed, InvalidSearchRequest) as failure:  # the query's embedding
            raise FileSearchFailed(str(failure)) from None  # upstream, or a bad option
        for result in results:
            text = "".join(part.get("text") or "" for part in result.content
                           if part.get("type") == "text")[:TEXT_CHARS]
            key = (result.file_id, text)
            if key not in found or found[key].score < result.score:
                found[key] = FileResult(file_id=result.file_id, filename=result.filename,
                                        score=result.score, attributes=dict(result.attributes),
                                        text=text)
    return sorted(found.values(), key=lambda r: -r.score)[:limit]

