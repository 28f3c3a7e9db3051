"""Settings of the tools the gateway runs (MCP, hosted tools, tool search) and of the files
and vector stores they read, from the environment (docs/configuration.md); `gateway.settings`
takes them all.
"""
from pathlib import Path

import environ

env = environ.Env()
VAR_DIR = Path(__file__).resolve().parent.parent / "var"

# --- MCP tools run by the gateway (mcp_tools/) ---------------------------------------------
# Request-supplied `server_url`s; False allows only servers an admin registered.
MCP_ALLOW_REQUEST_URLS = env.bool("MCP_ALLOW_REQUEST_URLS", default=True)
# CIDRs request-supplied URLs may reach although not globally routable (tests, private setups).
MCP_EGRESS_ALLOWLIST = env.list("MCP_EGRESS_ALLOWLIST", default=[])
MCP_CALL_TIMEOUT_SECONDS = env.float("MCP_CALL_TIMEOUT_SECONDS", default=60.0)
MCP_CONNECT_TIMEOUT_SECONDS = env.float("MCP_CONNECT_TIMEOUT_SECONDS", default=10.0)
MCP_MAX_SERVERS_PER_REQUEST = env.int("MCP_MAX_SERVERS_PER_REQUEST", default=8)
MCP_MAX_TOOLS_PER_SERVER = env.int("MCP_MAX_TOOLS_PER_SERVER", default=128)
MCP_MAX_RESULT_BYTES = env.int("MCP_MAX_RESULT_BYTES", default=1_000_000)
# MCP calls one response may make, whatever `max_tool_calls` says.
MCP_MAX_TOOL_CALLS = env.int("MCP_MAX_TOOL_CALLS", default=20)
# /v1/chat/completions: upstream turns that may run the tenant's MCP tools before the model
# must answer (the next turn is sent with tool_choice "none"); ORS's MAX_TOOL_CALL_ITERATIONS.
CHAT_MAX_TOOL_ITERATIONS = env.int("CHAT_MAX_TOOL_ITERATIONS", default=25)
# How long a worker reuses a registered MCP server's tools/list for chat completions.
CHAT_MCP_LISTING_SECONDS = env.float("CHAT_MCP_LISTING_SECONDS", default=60.0)

# --- hosted tools run by the gateway (hosted_tools/) ----------------------------------------
# Hosted tool types that, when this deployment cannot run them, are dropped (not offered,
# named in the X-Gateway-Dropped-Tools header, counted) instead of refused with a 400.
HOSTED_TOOLS_DROP_UNAVAILABLE = env.list(
    "HOSTED_TOOLS_DROP_UNAVAILABLE",
    default=["web_search", "web_search_2025_08_26", "web_search_preview",
             "web_search_preview_2025_03_11"])
# Hosted tool calls (web and file searches) one response may make, whatever max_tool_calls says;
# as many tool searches again.
HOSTED_MAX_TOOL_CALLS = env.int("HOSTED_MAX_TOOL_CALLS", default=8)
# Deferred tools one server-run tool search finds at most (hosted_tools.tool_ranking).
TOOL_SEARCH_MAX_RESULTS = env.int("TOOL_SEARCH_MAX_RESULTS", default=5)
# web_search's deployment-wide fallback backend: "" (none), "searxng", "brave" or "tavily".
# Backends configured in the admin win (a tenant's own, then one for every tenant);
# with none of them, the tool is dropped or refused (HOSTED_TOOLS_DROP_UNAVAILABLE).
WEB_SEARCH_BACKEND = env.str("WEB_SEARCH_BACKEND", default="")
# The backend's base URL: a SearXNG instance (its /search answers format=json), or Brave's
# API (default https://api.search.brave.com/res/v1), or Tavily's (default https://api.tavily.com).
WEB_SEARCH_URL = env.str("WEB_SEARCH_URL", default="")
WEB_SEARCH_API_KEY = env.str("WEB_SEARCH_API_KEY", default="")
WEB_SEARCH_TIMEOUT_SECONDS = env.float("WEB_SEARCH_TIMEOUT_SECONDS", default=15.0)
# CIDRs the search backend may be reached at although not public (a SearXNG on the LAN, tests).
WEB_SEARCH_EGRESS_ALLOWLIST = env.list("WEB_SEARCH_EGRESS_ALLOWLIST", default=[])
# A process re-reads the admin's search backends at most this often.
WEB_SEARCH_BACKENDS_CACHE_SECONDS = env.float("WEB_SEARCH_BACKENDS_CACHE_SECONDS", default=5.0)
# file_search runs against the tenant's vector stores (the vector_stores app); False refuses it.
FILE_SEARCH_ENABLED = env.bool("FILE_SEARCH_ENABLED", default=True)

# --- files and vector stores (files/, vector_stores/; docs/configuration.md) ----------------
FILES_MAX_BYTES = env.int("FILES_MAX_BYTES", default=512 * 1024 * 1024)
FILES_DIR = Path(env.str("FILES_DIR", default=str(VAR_DIR / "files")))
FILES_STORAGE_BACKEND = env.str("FILES_STORAGE_BACKEND",
                                default="django.core.files.storage.FileSystemStorage")
FILES_STORAGE_OPTIONS = env.json("FILES_STORAGE_OPTIONS", default={})
if FILES_STORAGE_BACKEND == "django.core.files.storage.FileSystemStorage":
    FILES_STORAGE_OPTIONS.setdefault("location", str(FILES_DIR))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "files": {"BACKEND": FILES_STORAGE_BACKEND, "OPTIONS": FILES_STORAGE_OPTIONS},
}
# The model ingestion and search embed with (routed like a chat model: upstreams/), the
# dimension of its vectors (fixed in the chunk table when it is migrated), texts per call.
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="text-embedding-3-small")
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=1536)
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=64)
# Ask the model for EMBEDDING_DIMENSIONS (`dimensions`: OpenAI's text-embedding-3 models
# shorten their vectors; servers whose models cannot refuse the field).
EMBEDDING_REQUEST_DIMENSIONS = env.bool("EMBEDDING_REQUEST_DIMENSIONS", default=False)
# An ingestion task's claim on a file; older, another task may take the file over.
INGESTION_CLAIM_SECONDS = env.int("INGESTION_CLAIM_SECONDS", default=900)
EMBEDDED_INGESTION_THREADS = env.int("EMBEDDED_INGESTION_THREADS", default=2)
# Without Redis (no celery beat): how often a thread of the process signs the chunks an
# upgrade left without sign bits (vector_stores/sign_backfill.py), as beat's task does; 0: never.
EMBEDDED_SIGN_INTERVAL_SECONDS = env.float("EMBEDDED_SIGN_INTERVAL_SECONDS", default=60.0)
# Stores of at most this many chunks (together) are searched exactly, larger ones by the
# HNSW index (vector_stores/search.py).
VECTOR_SEARCH_EXACT_MAX_CHUNKS = env.int("VECTOR_SEARCH_EXACT_MAX_CHUNKS", default=10_000)
# pgvector >= 0.8: an iterative HNSW scan visits at most about this many chunks
# (hnsw.max_scan_tuples) before the search falls back to the exact one (ranking.py);
# 0: no iterative scans (the over-fetch of older pgvector).
VECTOR_SEARCH_MAX_SCAN_TUPLES = env.int("VECTOR_SEARCH_MAX_SCAN_TUPLES", default=20_000)
# A filter's chunks, more than VECTOR_SEARCH_EXACT_MAX_CHUNKS and at most this many, are
# pre-ranked on their sign bits and the best re-ranked exactly, not walked in the HNSW index
# (vector_stores/sign_bits.py); 0: never.
VECTOR_SEARCH_SIGNS_MAX_CHUNKS = env.int("VECTOR_SEARCH_SIGNS_MAX_CHUNKS", default=30_000)
# A hybrid search's text ranking runs on one of this many threads per process, on a
# second connection, while the query is embedded and ranked by vector (side_reads.py);
# 0: both rankings in turn on the caller's connection.
VECTOR_SEARCH_SIDE_THREADS = env.int("VECTOR_SEARCH_SIDE_THREADS", default=4)
__all__ = [name for name in dict(globals()) if name.isupper() and name != "VAR_DIR"]
