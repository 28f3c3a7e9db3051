"""Settings, read only from the environment (see docs/configuration.md).

With no DATABASE_URL the database is an embedded PostgreSQL under var/
(gateway.embedded_postgres); with no REDIS_URL the worker and the event bus run in-process
(EMBEDDED). With both set it runs the production path: Postgres, Celery workers and Redis
Streams.
"""
from pathlib import Path

import environ

from observability import tracing
from observability.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="dev-insecure-change-me-" + "0" * 40)
# ALLOWED_HOSTS and the other settings of the public address: gateway/address_settings.py.

INSTALLED_APPS = [
    "daphne",
    "gateway",  # its system checks (gateway/checks.py)
    "dashboard.apps.GatewayAdminConfig",  # django.contrib.admin, its index the dashboard
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "responses_app",
    "conversations",
    "chat_completions",
    "mcp_tools",
    "hosted_tools",
    "accounting",
    "observability",
    "upstreams",
    "prompts",
    "client_checks",
    "api_schema",
    "dashboard",
    "files",
    "vector_stores",
]

MIDDLEWARE = [
    "observability.http.exchange_middleware",
    "responses_app.api.middleware.ApiErrorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # the admin's static files, from the apps' static folders (no collectstatic step)
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",  # the admin's; /v1 answers JSON (views)
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gateway.urls"
ASGI_APPLICATION = "gateway.asgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database: Postgres at DATABASE_URL, else the embedded PostgreSQL: gateway/database_settings.py
from gateway.database_settings import *  # noqa: E402,F403
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
SERVESTATIC_USE_FINDERS = True

# Bodies over this size get a 413 JSON error (Codex sends its whole history every turn).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("MAX_REQUEST_BODY_BYTES", default=16 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["responses_app.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["responses_app.api.parsers.JSONBodyParser"],
    "EXCEPTION_HANDLER": "responses_app.errors.drf_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["accounting.throttle.RateLimitThrottle"],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {  # the /v1/openapi.json document (see api_schema/)
    "TITLE": "Responses gateway API",
    "DESCRIPTION": "The OpenAI Responses API, served in front of Chat Completions backends.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/v1",
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": ["api_schema.hooks.add_components", "api_schema.hooks.add_links"],
}

# --- the gateway ---------------------------------------------------------------------------
UPSTREAM_BASE_URL = env.str("UPSTREAM_BASE_URL", default="http://127.0.0.1:11434/v1").rstrip("/")
UPSTREAM_API_KEY = env.str("UPSTREAM_API_KEY", default="")
UPSTREAM_CONNECT_TIMEOUT = env.float("UPSTREAM_CONNECT_TIMEOUT", default=10.0)
# No byte from the upstream for this long fails the run with `request_timeout`.
UPSTREAM_TIMEOUT = env.float("UPSTREAM_TIMEOUT", default=120.0)
UPSTREAM_MAX_TOKENS_PARAM = env.str("UPSTREAM_MAX_TOKENS_PARAM", default="max_completion_tokens")
# Merge consecutive user messages into one, for chat templates that insist on alternation.
UPSTREAM_MERGE_USER_MESSAGES = env.bool("UPSTREAM_MERGE_USER_MESSAGES", default=False)
# Comma-separated model names for GET /v1/models; empty asks the upstream's /models.
GATEWAY_MODELS = env.list("GATEWAY_MODELS", default=[])
# Models whose output messages carry `phase` (commentary / final_answer), as OpenAI's
# phase-trained models' do: comma-separated shell-style patterns, `*` for every model.
OUTPUT_PHASE_MODELS = env.list("OUTPUT_PHASE_MODELS", default=[])
# --- upstream routing (upstreams/): routes from the admin, the values above as the default
# Fernet keys for upstream API keys at rest, comma-separated: the first encrypts, all
# decrypt. Empty: a key derived from SECRET_KEY.
ENCRYPTION_KEYS = env.list("ENCRYPTION_KEYS", default=[])
# A process re-reads the route table at most this often.
UPSTREAM_ROUTES_CACHE_SECONDS = env.float("UPSTREAM_ROUTES_CACHE_SECONDS", default=5.0)
# Attempts after the first, only before the upstream sent a byte (connection failures,
# 429/502/503/504); a Retry-After longer than UPSTREAM_RETRY_MAX_WAIT is not waited for.
UPSTREAM_MAX_RETRIES = env.int("UPSTREAM_MAX_RETRIES", default=2)
UPSTREAM_RETRY_MAX_WAIT = env.float("UPSTREAM_RETRY_MAX_WAIT", default=5.0)
# Open streams to the default upstream across the deployment (0: no limit; upstreams/pool.py).
UPSTREAM_MAX_CONCURRENCY = env.int("UPSTREAM_MAX_CONCURRENCY", default=0)
# Replicas of a route (upstreams/pool.py): a replica that failed before its first byte is
# skipped this long; a chain stays on its replica while that one holds at most
# UPSTREAM_AFFINITY_MAX_EXCESS calls more than the least loaded replica, and is remembered
# this long; a worker's slot of a route's limit lapses this long after the worker died.
UPSTREAM_REPLICA_COOLDOWN_SECONDS = env.float("UPSTREAM_REPLICA_COOLDOWN_SECONDS", default=10.0)
UPSTREAM_AFFINITY_MAX_EXCESS = env.int("UPSTREAM_AFFINITY_MAX_EXCESS", default=4)
UPSTREAM_AFFINITY_TTL_SECONDS = env.float("UPSTREAM_AFFINITY_TTL_SECONDS", default=900.0)
UPSTREAM_LEASE_SECONDS = env.float("UPSTREAM_LEASE_SECONDS", default=30.0)
# The default upstream's context window (0: unknown) and token counter (estimate,
# tokenizer with UPSTREAM_TOKENIZER_PATH, vllm or llamacpp): see upstreams/token_counting.py.
UPSTREAM_CONTEXT_WINDOW = env.int("UPSTREAM_CONTEXT_WINDOW", default=0)
UPSTREAM_TOKEN_COUNTER = env.str("UPSTREAM_TOKEN_COUNTER", default="estimate")
UPSTREAM_TOKENIZER_PATH = env.str("UPSTREAM_TOKENIZER_PATH", default="")
# The default upstream (issue 29): does its model take images; which create parameters
# (prompt_cache_key, prompt_cache_retention, service_tier, safety_identifier) it is sent.
UPSTREAM_ACCEPTS_IMAGES = env.bool("UPSTREAM_ACCEPTS_IMAGES", default=True)
UPSTREAM_PASSTHROUGH_PARAMS = env.list("UPSTREAM_PASSTHROUGH_PARAMS", default=[])
# Server-side compaction (responses_app/context/): the user messages a compaction keeps, at
# most this many characters of them, newest first (the newest is always kept).
COMPACTION_KEEP_USER_CHARS = env.int("COMPACTION_KEEP_USER_CHARS", default=20_000)

# A revoked API key keeps working at most this long on a process that used it recently.
API_KEY_CACHE_SECONDS = env.float("API_KEY_CACHE_SECONDS", default=10.0)
SSE_KEEPALIVE_SECONDS = env.float("SSE_KEEPALIVE_SECONDS", default=15.0)
# WebSocket mode (responses_app/api/websocket.py): a socket's longest life, and how long it
# may stay idle (no frame from the client, no response running) before it is closed.
WEBSOCKET_MAX_AGE_SECONDS = env.float("WEBSOCKET_MAX_AGE_SECONDS", default=3600.0)
WEBSOCKET_IDLE_SECONDS = env.float("WEBSOCKET_IDLE_SECONDS", default=900.0)
# response.create frames waiting behind the running one of a stream (FIFO); more: an error.
WEBSOCKET_MAX_QUEUED = env.int("WEBSOCKET_MAX_QUEUED", default=16)
# Streams (`stream_id` values) one socket may run side by side.
WEBSOCKET_MAX_STREAMS = env.int("WEBSOCKET_MAX_STREAMS", default=16)
# Stream events stay replayable this long after a run ends.
EVENT_RETENTION_SECONDS = env.int("EVENT_RETENTION_SECONDS", default=24 * 3600)
# Batching under load only. While other runs stream on its process, the worker reads the
# upstream at most once per STREAM_BATCH_MS: chunks that arrive in between travel together
# (one bus entry, one client write); after the model's finish reason it reads at once. Bus
# entries gather for the worker process's next flush to Redis (STREAM_FLUSH_TICK_MS below;
# an end is urgent: it goes at once, or right after the flush in flight); a web process
# hears each entry as it is flushed (pub/sub). A run alone goes through as its
# chunks arrive, and so does a stream whose chunks come STREAM_BATCH_MS apart or more.
STREAM_BATCH_MS = env.float("STREAM_BATCH_MS", default=50.0)
STREAM_FLUSH_INTERVAL_MS = env.float("STREAM_FLUSH_INTERVAL_MS", default=20.0)
# A worker process's flushes to Redis start at least this far apart: entries of all its runs
# written meanwhile go in the next flush (one script call, one wake-up of each web reader),
# each waiting at most this long (the first delta and the end go at once); 0 sends an entry
# that finds nothing in flight at once, and those written during a flight gather for up to
# STREAM_FLUSH_INTERVAL_MS after it.
STREAM_FLUSH_TICK_MS = env.float("STREAM_FLUSH_TICK_MS", default=20.0)
# Under load a worker loop reads its paced streams together once per flush tick and flushes
# what it read at once (a delta waits at most a tick for it). Off: each paced chunk is read
# as it arrives (~10% more worker CPU at 20 chunks a second; docs/configuration.md).
STREAM_TICK_READS = env.bool("STREAM_TICK_READS", default=True)
# The longest a run may take end to end.
RUN_DEADLINE_SECONDS = env.int("RUN_DEADLINE_SECONDS", default=3600)
# POST /cancel waits this long for a running response to stop and store what it produced.
CANCEL_WAIT_SECONDS = env.float("CANCEL_WAIT_SECONDS", default=5.0)
# Workers refresh a heartbeat (TTL below) a few times per TTL; every WATCHDOG_INTERVAL one
# process fails the runs of workers whose heartbeat expired, and gives back to the run
# queue the messages they had taken and not claimed (responses_app/delivery/redelivery.py).
WORKER_HEARTBEAT_TTL_SECONDS = env.float("WORKER_HEARTBEAT_TTL_SECONDS", default=15.0)
WATCHDOG_INTERVAL_SECONDS = env.float("WATCHDOG_INTERVAL_SECONDS", default=5.0)
# A run whose result meets a database outage tries again this long, then leaves the run to
# the watchdog (responses_app/worker/run_store.py).
RUN_DATABASE_RETRY_SECONDS = env.float("RUN_DATABASE_RETRY_SECONDS", default=30.0)

# Stored responses older than this many days are deleted (with their events) by a periodic
# task of `celery beat`, every RETENTION_PRUNE_INTERVAL_SECONDS; 0 keeps them forever.
RESPONSE_RETENTION_DAYS = env.int("RESPONSE_RETENTION_DAYS", default=0)
RETENTION_PRUNE_INTERVAL_SECONDS = env.int("RETENTION_PRUNE_INTERVAL_SECONDS", default=3600)

# --- tools the gateway runs, files and vector stores: gateway/tool_settings.py --------------
from gateway.tool_settings import *  # noqa: E402,F403

# --- event bus and worker: Redis + Celery when REDIS_URL is set, else in-process -----------
REDIS_URL = env.str("REDIS_URL", default="")
EMBEDDED = not REDIS_URL
EMBEDDED_WORKER_THREADS = env.int("EMBEDDED_WORKER_THREADS", default=32)
# Allocations between two young-generation garbage collections (Python's default: 700).
GC_GEN0_THRESHOLD = env.int("GC_GEN0_THRESHOLD", default=50_000)
# Threads the web process uses for database work on the streaming path.
WEB_DB_THREADS = env.int("WEB_DB_THREADS", default=8)
# Threads a worker process's runs hand the rest of their database work to (see docs/configuration.md).
WORKER_DB_THREADS = env.int("WORKER_DB_THREADS", default=8)
# Postgres connections of each of an event loop's two pools (a web process's loop, a
# worker's run loop) for the statements sent from the loop: a response's INSERT and a run's
# claim (committed without waiting for the disk), and a run's result.
DATABASE_LOOP_POOL_SIZE = env.int("DATABASE_LOOP_POOL_SIZE", default=8)
# Those statements are prepared on the server (off: behind a pooler in transaction mode that
# does not keep prepared statements, such as PgBouncer before 1.21).
DATABASE_LOOP_PREPARED_STATEMENTS = env.bool("DATABASE_LOOP_PREPARED_STATEMENTS", default=True)

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = env.int("WORKER_CONCURRENCY", default=200)
# A run is claimed atomically (queued -> in_progress), so a redelivered message could never
# run it again: the broker's ack emulation (an unacked hash and a visibility timeout) would
# cost half of Celery's per-task work in the worker and buy nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {"ack_emulation": False}
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = {
    "prune-responses": {
        "task": "responses_app.prune_responses",
        "schedule": RETENTION_PRUNE_INTERVAL_SECONDS,
        "options": {"expires": RETENTION_PRUNE_INTERVAL_SECONDS},
    },
    # The dashboard's rollups (dashboard/rollup.py): each UTC hour and day is written once,
    # an hour after it ended.
    "dashboard-rollup": {
        "task": "dashboard.roll_up_buckets",
        "schedule": 3600,
        "options": {"expires": 3600},
    },
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- limits, quotas, observability ---------------------------------------------------------
# Deployment defaults of the limits (0: unlimited); per-tenant overrides live in the database
# (admin, or `manage.py set_limits`). Per minute and per API key or per tenant.
DEFAULT_LIMITS = {
    "requests_per_minute": env.int("TENANT_REQUESTS_PER_MINUTE", default=0),
    "tokens_per_minute": env.int("TENANT_TOKENS_PER_MINUTE", default=0),
    "concurrent_runs": env.int("TENANT_CONCURRENT_RUNS", default=0),
    "key_requests_per_minute": env.int("KEY_REQUESTS_PER_MINUTE", default=0),
    "key_tokens_per_minute": env.int("KEY_TOKENS_PER_MINUTE", default=0),
    "key_concurrent_runs": env.int("KEY_CONCURRENT_RUNS", default=0),
    "monthly_token_budget": env.int("TENANT_MONTHLY_TOKEN_BUDGET", default=0),
}
# A concurrent-run slot whose worker died lapses after the run deadline plus this margin.
RUN_SLOT_LEASE_MARGIN_SECONDS = env.int("RUN_SLOT_LEASE_MARGIN_SECONDS", default=120)

LOGGING = logging_config(level=env.str("LOG_LEVEL", default="INFO"),
                         library_level=env.str("LIBRARY_LOG_LEVEL", default="WARNING"),
                         json=env.str("LOG_FORMAT", default="json") == "json",
                         trace_ids=tracing.ENABLED)

CELERY_BEAT_SCHEDULE["requeue-stalled-ingestion"] = {
    "task": "vector_stores.requeue_stalled_ingestion", "schedule": 60.0,
    "options": {"expires": 60.0}}
# The chunks stored before their sign bits' column (vector_stores/sign_backfill.py): a run
# signs batches for up to 45 s; once none is left, a probe of an empty index.
CELERY_BEAT_SCHEDULE["sign-unsigned-chunks"] = {
    "task": "vector_stores.sign_unsigned_chunks", "schedule": 60.0,
    "options": {"expires": 60.0}}

CSRF_FAILURE_VIEW = "responses_app.api.views.csrf_failure"


# --- the public address: PUBLIC_URL, hosts, the TLS proxy: gateway/address_settings.py -------
from gateway.address_settings import *  # noqa: E402,F403
