"""What each Files, Vector Stores and Embeddings operation takes and answers, for the
OpenAPI document (merged into api_schema.operations' DOCUMENTED_VIEWS and LINKS)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from .components import ref

MEANINGS = {
    400: "Invalid request (`invalid_request_error`), naming the parameter.",
    401: "Missing or invalid API key (`invalid_api_key`).",
    404: "No such file, vector store, store file or batch for this tenant (another "
         "tenant's ids are not revealed).",
    413: "The file is larger than FILES_MAX_BYTES (`file_too_large`).",
    415: "Not a JSON body.",
    429: "Rate limited (`rate_limit_exceeded`, with Retry-After).",
    500: "The server had an error (`server_error`).",
    502: "The embedding upstream failed (`upstream_error`).",
}


def errors(*statuses: int) -> dict:
    return {status: OpenApiResponse(ref("Error"), description=MEANINGS[status])
            for status in sorted({*statuses, 401, 429, 500})}


def ok(component: str) -> dict:
    return {200: OpenApiResponse(ref(component))}


def path_id(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.PATH,
                            description=description)


FILE_ID = path_id("file_id", "A file id (`file-…`).")
STORE_ID = path_id("store_id", "A vector store id (`vs_…`).")
BATCH_ID = path_id("batch_id", "A file batch id (`vsfb_…`).")
ORDER = OpenApiParameter("order", str, enum=["asc", "desc"], default="desc")
PAGING = [OpenApiParameter("after", OpenApiTypes.STR, description="An id to list after."),
          OpenApiParameter("before", OpenApiTypes.STR, description="An id to list before."),
          OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100,
                                     "default": 20}), ORDER]
STATUS_FILTER = OpenApiParameter("filter", str,
                                 enum=["in_progress", "completed", "failed", "cancelled"])


NO_BODY = object()


def op(operation_id: str, summary: str, responses: dict, *, parameters=(), request=NO_BODY):
    arguments = {"operation_id": operation_id, "summary": summary,
                 "parameters": list(parameters), "responses": responses}
    arguments["request"] = None if request is NO_BODY else request
    return arguments


JSON = "application/json"
STORE_OPERATIONS = {
    "files.views.FileList": {
        "get": op("listFiles", "The tenant's files, newest first", {**ok("FileList"),
                                                                    **errors(400)},
                  parameters=[OpenApiParameter("after", OpenApiTypes.STR),
                              OpenApiParameter("limit", {"type": "integer", "minimum": 1,
                                                         "maximum": 10000}),
                              ORDER, OpenApiParameter("purpose", OpenApiTypes.STR)]),
        "post": op("createFile", "Upload a file (multipart: `file`, `purpose`)",
                   {**ok("File"), **errors(400, 413)},
                   request={"multipart/form-data": ref("UploadFileRequest")}),
    },
    "files.views.FileDetail": {
        "get": op("retrieveFile", "Retrieve a file", {**ok("File"), **errors(404)},
                  parameters=[FILE_ID]),
        "delete": op("deleteFile", "Delete a file (and its place in every vector store)",
                     {**ok("FileDeleted"), **errors(404)}, parameters=[FILE_ID]),
    },
    "files.views.FileContent": {
        "get": op("downloadFile", "A file's bytes",
                  {(200, "application/octet-stream"): OpenApiResponse(
                      {"type": "string", "format": "binary"}), **errors(404)},
                  parameters=[FILE_ID]),
    },
    "vector_stores.views.StoreList": {
        "get": op("listVectorStores", "The tenant's vector stores",
                  {**ok("VectorStoreList"), **errors(400)}, parameters=PAGING),
        "post": op("createVectorStore", "Create a vector store (its files ingested)",
                   {**ok("VectorStore"), **errors(400, 404, 415)},
                   request={JSON: ref("CreateVectorStoreRequest")}),
    },
    "vector_stores.views.StoreDetail": {
        "get": op("getVectorStore", "Retrieve a vector store",
                  {**ok("VectorStore"), **errors(404)}, parameters=[STORE_ID]),
        "post": op("modifyVectorStore", "Change a store's name, metadata or expiry",
                   {**ok("VectorStore"), **errors(400, 404, 415)}, parameters=[STORE_ID],
                   request={JSON: ref("UpdateVectorStoreRequest")}),
        "delete": op("deleteVectorStore", "Delete a vector store",
                     {**ok("VectorStoreDeleted"), **errors(404)}, parameters=[STORE_ID]),
    },
    "vector_stores.views.StoreSearch": {
        "post": op("searchVectorStore", "Hybrid search of a store's chunks",
                   {**ok("VectorStoreSearchResultsPage"), **errors(400, 404, 415, 502)},
                   parameters=[STORE_ID], request={JSON: ref("VectorStoreSearchRequest")}),
    },
    "vector_stores.views.StoreFileList": {
        "get": op("listVectorStoreFiles", "A store's files",
                  {**ok("VectorStoreFileList"), **errors(400, 404)},
                  parameters=[STORE_ID, *PAGING, STATUS_FILTER]),
        "post": op("createVectorStoreFile", "Attach a file (ingested in the background)",
                   {**ok("VectorStoreFile"), **errors(400, 404, 415)}, parameters=[STORE_ID],
                   request={JSON: ref("CreateVectorStoreFileRequest")}),
    },
    "vector_stores.views.StoreFileDetail": {
        "get": op("getVectorStoreFile", "A store file and its ingestion state",
                  {**ok("VectorStoreFile"), **errors(404)}, parameters=[STORE_ID, FILE_ID]),
        "post": op("updateVectorStoreFileAttributes", "Replace a store file's attributes",
                   {**ok("VectorStoreFile"), **errors(400, 404, 415)},
                   parameters=[STORE_ID, FILE_ID],
                   request={JSON: ref("UpdateVectorStoreFileRequest")}),
        "delete": op("deleteVectorStoreFile", "Detach a file (the file stays)",
                     {**ok("VectorStoreFileDeleted"), **errors(404)},
                     parameters=[STORE_ID, FILE_ID]),
    },
    "vector_stores.views.StoreFileContent": {
        "get": op("retrieveVectorStoreFileContent", "A store file's chunks, in order",
                  {**ok("VectorStoreFileContent"), **errors(404)},
                  parameters=[STORE_ID, FILE_ID]),
    },
    "vector_stores.views.BatchCreate": {
        "post": op("createVectorStoreFileBatch", "Attach files as one batch",
                   {**ok("VectorStoreFileBatch"), **errors(400, 404, 415)},
                   parameters=[STORE_ID],
                   request={JSON: ref("CreateVectorStoreFileBatchRequest")}),
    },
    "vector_stores.views.BatchDetail": {
        "get": op("getVectorStoreFileBatch", "A file batch and its counts",
                  {**ok("VectorStoreFileBatch"), **errors(404)},
                  parameters=[STORE_ID, BATCH_ID]),
    },
    "vector_stores.views.BatchCancel": {
        "post": op("cancelVectorStoreFileBatch", "Cancel a batch's files still in progress",
                   {**ok("VectorStoreFileBatch"), **errors(404)},
                   parameters=[STORE_ID, BATCH_ID]),
    },
    "vector_stores.views.BatchFiles": {
        "get": op("listFilesInVectorStoreBatch", "A batch's files",
                  {**ok("VectorStoreFileList"), **errors(400, 404)},
                  parameters=[STORE_ID, BATCH_ID, *PAGING, STATUS_FILTER]),
    },
    "vector_stores.views.Embeddings": {
        "post": op("createEmbedding", "Embeddings from the model's upstream route",
                   {**ok("CreateEmbeddingResponse"),
                    400: OpenApiResponse(ref("Error"), description="Invalid request, or the "
                                         "upstream refused it (its status and message)."),
                    404: OpenApiResponse(ref("Error"), description="The upstream does not "
                                         "know the model."),
                    **errors(415, 502)},
                   request={JSON: ref("CreateEmbeddingRequest")}),
    },
}


def _links(parameter: str, **operations: str) -> dict:
    return {name: {"operationId": operation_id, "parameters": {parameter: "$response.body#/id"}}
            for name, operation_id in operations.items()}


STORE_LINKS = {
    ("/v1/files", "post", "200"): _links("file_id", RetrieveFile="retrieveFile",
                                         DeleteFile="deleteFile", DownloadFile="downloadFile"),
    ("/v1/vector_stores", "post", "200"): _links(
        "store_id", GetVectorStore="getVectorStore", ModifyVectorStore="modifyVectorStore",
        SearchVectorStore="searchVectorStore", ListVectorStoreFiles="listVectorStoreFiles",
        DeleteVectorStore="deleteVectorStore"),
}
