"""Which search backend serves a tenant's `web_search`: the backends table, cached per process.

Precedence: the tenant's own enabled backend (admin), else the enabled backend with no tenant
(admin: the deployment's default), else the one the WEB_SEARCH_* settings describe (the
bootstrap: a deployment configured by environment only), else none (the tool is dropped or
refused: hosted_tools.tenant_tools). The table is read from the database at most once per
WEB_SEARCH_BACKENDS_CACHE_SECONDS per process (at once after a save in the same process:
hosted_tools.signals), like upstreams.routing's route table, so a search adds no query.
"""
import logging
from dataclasses import dataclass, field

from django.conf import settings

from upstreams.secrets import SecretUnreadable
from upstreams.table_cache import TableCache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchBackend:
    """What one search needs (the key in clear, in memory only)."""

    name: str
    kind: str
    url: str
    api_key: str
    timeout: float
    # Why this backend cannot be used (its key does not decrypt): its searches fail saying so
    # rather than going to another backend.
    problem: str | None = None


@dataclass(frozen=True)
class BackendTable:
    by_tenant: dict[int, SearchBackend] = field(default_factory=dict)
    default: SearchBackend | None = None

    def for_tenant(self, tenant_id: int) -> SearchBackend | None:
        return self.by_tenant.get(tenant_id, self.default)


_tables = TableCache(lambda: load_backend_table(), "WEB_SEARCH_BACKENDS_CACHE_SECONDS")


def remembered_backends() -> BackendTable | None:
    """The table in memory, or None when it must be read again (from an event loop, which
    must not wait for the database)."""
    return _tables.remembered()


def backend_table() -> BackendTable:
    """The current table (reloaded from the database when older than the cache TTL)."""
    return _tables.current()


def forget_backends() -> None:
    _tables.forget()


def settings_backend() -> SearchBackend | None:
    """The backend of the WEB_SEARCH_* settings (None: WEB_SEARCH_BACKEND is empty)."""
    if not settings.WEB_SEARCH_BACKEND:
        return None
    return SearchBackend(name="settings", kind=settings.WEB_SEARCH_BACKEND,
                         url=settings.WEB_SEARCH_URL, api_key=settings.WEB_SEARCH_API_KEY,
                         timeout=settings.WEB_SEARCH_TIMEOUT_SECONDS)


def load_backend_table() -> BackendTable:
    from .models import WebSearchBackend

    by_tenant, default = {}, None
    for row in WebSearchBackend.objects.filter(enabled=True):
        if row.tenant_id is None:
            default = _backend_of(row)
        else:
            by_tenant[row.tenant_id] = _backend_of(row)
    return BackendTable(by_tenant=by_tenant, default=default or settings_backend())


def _backend_of(row) -> SearchBackend:
    problem = None
    try:
        api_key = row.api_key()
    except SecretUnreadable:
        log.error("web search backend %r: its API key does not decrypt with ENCRYPTION_KEYS",
                  row.name)
        api_key, problem = "", "its API key cannot be decrypted"
    return SearchBackend(name=row.name, kind=row.kind, url=row.url, api_key=api_key,
                         timeout=row.timeout_seconds or settings.WEB_SEARCH_TIMEOUT_SECONDS,
                         problem=problem)
