"""The OpenAPI components of the Files, Vector Stores and Embeddings endpoints, in OpenAI's
shapes (files.selectors, vector_stores.selectors and views, the upstream's embeddings
answer); request bodies as vector_stores.services and embeddings_api check them."""
from responses_app.create.fields import MODEL_MAX_LENGTH, ref

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_INTEGER = {"type": ["integer", "null"]}
ATTRIBUTE_VALUE = {"type": ["string", "number", "boolean"]}
ATTRIBUTES = {"type": "object", "maxProperties": 16, "additionalProperties": ATTRIBUTE_VALUE}
FILE_COUNTS = {
    "type": "object",
    "required": ["in_progress", "completed", "failed", "cancelled", "total"],
    "properties": {name: INTEGER for name in
                   ("in_progress", "completed", "failed", "cancelled", "total")},
}
CHUNKING_STRATEGY = {
    "type": "object",
    "description": "`{\"type\": \"auto\"}` (800 tokens, 400 overlap) or `{\"type\": "
                   "\"static\", \"static\": {\"max_chunk_size_tokens\": 100-4096, "
                   "\"chunk_overlap_tokens\": at most half}}`.",
    "required": ["type"],
    "properties": {"type": {"enum": ["auto", "static"]}, "static": {
        "type": "object", "required": ["max_chunk_size_tokens", "chunk_overlap_tokens"],
        "properties": {"max_chunk_size_tokens": {"type": "integer", "minimum": 100,
                                                 "maximum": 4096},
                       "chunk_overlap_tokens": {"type": "integer", "minimum": 0}}}},
}


def _list_of(item: dict) -> dict:
    return {"type": "object", "required": ["object", "data", "first_id", "last_id", "has_more"],
            "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": item},
                           "first_id": NULLABLE_STRING, "last_id": NULLABLE_STRING,
                           "has_more": {"type": "boolean"}}}


def _deleted(object_name: str) -> dict:
    return {"type": "object", "required": ["id", "object", "deleted"],
            "properties": {"id": STRING, "object": {"const": object_name},
                           "deleted": {"const": True}}}


FILE = {
    "type": "object",
    "required": ["id", "object", "bytes", "created_at", "filename", "purpose", "status"],
    "properties": {
        "id": {"type": "string", "pattern": "^file-"}, "object": {"const": "file"},
        "bytes": INTEGER, "created_at": INTEGER, "filename": STRING, "purpose": STRING,
        "status": {"const": "processed"}, "expires_at": NULLABLE_INTEGER,
        "status_details": NULLABLE_STRING,
    },
}
UPLOAD_FILE = {
    "type": "object",
    "required": ["file", "purpose"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        "purpose": {"enum": ["assistants", "batch", "fine-tune", "vision", "user_data",
                             "evals"]},
    },
}
VECTOR_STORE = {
    "type": "object",
    "required": ["id", "object", "created_at", "name", "usage_bytes", "file_counts", "status",
                 "last_active_at", "metadata"],
    "properties": {
        "id": {"type": "string", "pattern": "^vs_"}, "object": {"const": "vector_store"},
        "created_at": INTEGER, "name": STRING, "description": NULLABLE_STRING,
        "usage_bytes": INTEGER, "file_counts": FILE_COUNTS,
        "status": {"enum": ["expired", "in_progress", "completed"]},
        "expires_after": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["anchor", "days"],
            "properties": {"anchor": {"const": "last_active_at"}, "days": INTEGER}}]},
        "expires_at": NULLABLE_INTEGER, "last_active_at": INTEGER,
        "metadata": {"type": "object", "additionalProperties": STRING},
    },
}
EXPIRES_AFTER = {"type": "object", "required": ["anchor", "days"], "additionalProperties": False,
                 "properties": {"anchor": {"const": "last_active_at"},
                                "days": {"type": "integer", "minimum": 1, "maximum": 365}}}
CREATE_VECTOR_STORE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 512},
        "description": {"type": "string", "maxLength": 4096},
        "file_ids": {"type": "array", "items": STRING, "maxItems": 2000},
        "metadata": {"oneOf": [{"type": "null"}, ref("Metadata")]},
        "expires_after": {"oneOf": [{"type": "null"}, EXPIRES_AFTER]},
        "chunking_strategy": CHUNKING_STRATEGY,
    },
}
UPDATE_VECTOR_STORE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"name": {"type": ["string", "null"], "maxLength": 512},
                   "metadata": {"oneOf": [{"type": "null"}, ref("Metadata")]},
                   "expires_after": {"oneOf": [{"type": "null"}, EXPIRES_AFTER]}},
}
VECTOR_STORE_FILE = {
    "type": "object",
    "required": ["id", "object", "usage_bytes", "created_at", "vector_store_id", "status",
                 "last_error", "attributes", "chunking_strategy"],
    "properties": {
        "id": STRING, "object": {"const": "vector_store.file"}, "usage_bytes": INTEGER,
        "created_at": INTEGER, "vector_store_id": STRING,
        "status": {"enum": ["in_progress", "completed", "cancelled", "failed"]},
        "last_error": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["code", "message"],
            "properties": {"code": {"enum": ["server_error", "unsupported_file",
                                             "invalid_file"]},
                           "message": STRING}}]},
        "attributes": ATTRIBUTES, "chunking_strategy": CHUNKING_STRATEGY,
    },
}
CREATE_VECTOR_STORE_FILE = {
    "type": "object", "required": ["file_id"], "additionalProperties": False,
    "properties": {"file_id": STRING, "attributes": {"oneOf": [{"type": "null"}, ATTRIBUTES]},
                   "chunking_strategy": CHUNKING_STRATEGY},
}
UPDATE_VECTOR_STORE_FILE = {
    "type": "object", "required": ["attributes"], "additionalProperties": False,
    "properties": {"attributes": {"oneOf": [{"type": "null"}, ATTRIBUTES]}},
}
FILE_BATCH = {
    "type": "object",
    "required": ["id", "object", "created_at", "vector_store_id", "status", "file_counts"],
    "properties": {
        "id": {"type": "string", "pattern": "^vsfb_"},
        "object": {"const": "vector_store.files_batch"}, "created_at": INTEGER,
        "vector_store_id": STRING,
        "status": {"enum": ["in_progress", "completed", "cancelled", "failed"]},
        "file_counts": FILE_COUNTS,
    },
}
CREATE_FILE_BATCH = {
    "type": "object", "additionalProperties": False,
    "description": "Exactly one of `file_ids` and `files`.",
    "properties": {
        "file_ids": {"type": "array", "minItems": 1, "maxItems": 2000, "items": STRING},
        "files": {"type": "array", "minItems": 1, "maxItems": 2000, "items": {
            "type": "object", "required": ["file_id"], "additionalProperties": False,
            "properties": {"file_id": STRING,
                           "attributes": {"oneOf": [{"type": "null"}, ATTRIBUTES]},
                           "chunking_strategy": CHUNKING_STRATEGY}}},
        "attributes": {"oneOf": [{"type": "null"}, ATTRIBUTES]},
        "chunking_strategy": CHUNKING_STRATEGY,
    },
}
TEXT_CONTENT = {"type": "object", "required": ["type", "text"],
                "properties": {"type": {"const": "text"}, "text": STRING}}
FILE_CONTENT_PAGE = {
    "type": "object", "required": ["object", "data", "has_more", "next_page"],
    "properties": {"object": {"const": "vector_store.file_content.page"},
                   "data": {"type": "array", "items": TEXT_CONTENT},
                   "has_more": {"type": "boolean"}, "next_page": NULLABLE_STRING},
}
SEARCH_REQUEST = {
    "type": "object", "required": ["query"], "additionalProperties": False,
    "properties": {
        "query": {"oneOf": [STRING, {"type": "array", "items": STRING}]},
        "filters": {"type": "object", "description": "A comparison filter (`type` eq, ne, "
                    "gt, gte, lt, lte, in, nin; `key`; `value`) or a compound one (`type` and "
                    "or or; `filters`)."},
        "max_num_results": {"type": "integer", "minimum": 1, "maximum": 50},
        "ranking_options": {"type": "object", "additionalProperties": False, "properties": {
            "ranker": {"enum": ["auto", "default-2024-11-15", "none"]},
            "score_threshold": {"type": "number", "minimum": 0, "maximum": 1}}},
        "rewrite_query": {"type": "boolean"},
    },
}
SEARCH_PAGE = {
    "type": "object", "required": ["object", "search_query", "data", "has_more", "next_page"],
    "properties": {
        "object": {"const": "vector_store.search_results.page"},
        "search_query": {"type": "array", "items": STRING},
        "data": {"type": "array", "items": {
            "type": "object", "required": ["file_id", "filename", "score", "attributes",
                                           "content"],
            "properties": {"file_id": STRING, "filename": STRING,
                           "score": {"type": "number", "minimum": 0, "maximum": 1},
                           "attributes": ATTRIBUTES,
                           "content": {"type": "array", "items": TEXT_CONTENT}}}},
        "has_more": {"const": False}, "next_page": {"type": "null"},
    },
}
EMBEDDINGS_REQUEST = {
    "type": "object", "required": ["model", "input"], "additionalProperties": False,
    "properties": {
        "model": {"type": "string", "minLength": 1, "maxLength": MODEL_MAX_LENGTH},
        "input": {"oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "minItems": 1, "maxItems": 2048,
             "items": {"type": "string", "minLength": 1}},
            {"type": "array", "minItems": 1, "maxItems": 2048, "items": {"type": "integer"}},
            {"type": "array", "minItems": 1, "maxItems": 2048,
             "items": {"type": "array", "minItems": 1, "items": {"type": "integer"}}}]},
        "encoding_format": {"enum": ["float", "base64"]},
        "dimensions": {"type": "integer", "minimum": 1},
        "user": STRING,
    },
}
EMBEDDINGS = {
    "type": "object", "required": ["object", "data"],
    "description": "The upstream's answer, as it gave it.",
    "properties": {"object": {"const": "list"}, "model": STRING,
                   "data": {"type": "array", "items": {"type": "object"}},
                   "usage": {"type": "object"}},
}

STORE_COMPONENTS = {
    "File": FILE, "FileList": _list_of(FILE), "FileDeleted": _deleted("file"),
    "UploadFileRequest": UPLOAD_FILE,
    "VectorStore": VECTOR_STORE, "VectorStoreList": _list_of(VECTOR_STORE),
    "VectorStoreDeleted": _deleted("vector_store.deleted"),
    "CreateVectorStoreRequest": CREATE_VECTOR_STORE,
    "UpdateVectorStoreRequest": UPDATE_VECTOR_STORE,
    "VectorStoreFile": VECTOR_STORE_FILE, "VectorStoreFileList": _list_of(VECTOR_STORE_FILE),
    "VectorStoreFileDeleted": _deleted("vector_store.file.deleted"),
    "CreateVectorStoreFileRequest": CREATE_VECTOR_STORE_FILE,
    "UpdateVectorStoreFileRequest": UPDATE_VECTOR_STORE_FILE,
    "VectorStoreFileContent": FILE_CONTENT_PAGE,
    "VectorStoreFileBatch": FILE_BATCH, "CreateVectorStoreFileBatchRequest": CREATE_FILE_BATCH,
    "VectorStoreSearchRequest": SEARCH_REQUEST, "VectorStoreSearchResultsPage": SEARCH_PAGE,
    "CreateEmbeddingRequest": EMBEDDINGS_REQUEST, "CreateEmbeddingResponse": EMBEDDINGS,
}
