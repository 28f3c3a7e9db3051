"""Which upstream serves a model: the route table, cached per process.

Resolution is an in-memory lookup: exact model name, then the longest matching prefix,
then the deployment default built from UPSTREAM_* settings. The table is read from the
database at most once per UPSTREAM_ROUTES_CACHE_SECONDS per process (and at once after a
save in the same process), so routing adds no query to a request.
"""
import logging
from dataclasses import dataclass

from django.conf import settings

from .secrets import SecretUnreadable
from .table_cache import TableCache

log = logging.getLogger(__name__)

DEFAULT_ROUTE_NAME = "default"


@dataclass(frozen=True)
class Route:
    """Everything a run needs to call one upstream (its key in clear, in memory only)."""

    name: str
    base_url: str
    api_key: str
    connect_timeout: float
    idle_timeout: float
    headers: tuple[tuple[str, str], ...] = ()
    max_concurrency: int = 0
    pattern: str | None = None  # None: the deployment default
    context_window: int | None = None  # tokens; None: unknown (vLLM: asked, see token_counting)
    token_counter: str = "estimate"
    tokenizer_path: str = ""
    accepts_images: bool = True
    passthrough_params: tuple[str, ...] = ()  # create parameters sent on as they are
    # Why this route cannot be used (its key does not decrypt); its requests then fail
    # rather than silently going to another upstream.
    problem: str | None = None
    # More base URLs of the same model server (replicas): see upstreams/pool.py.
    more_urls: tuple[str, ...] = ()

    @property
    def replicas(self) -> tuple[str, ...]:
        """Every base URL of the route, its `base_url` first."""
        return (self.base_url, *self.more_urls)

    def request_headers(self) -> dict:
        """Authorization and the route's extra headers."""
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        headers.update(self.headers)
        return headers


@dataclass(frozen=True)
class RouteTable:
    exact: dict[str, Route]
    prefixes: tuple[tuple[str, Route], ...]  # longest prefix first
    default: Route

    def route_for(self, model: str) -> Route:
        route = self.exact.get(model)
        if route is not None:
            return route
        for prefix, route in self.prefixes:
            if model.startswith(prefix):
                return route
        return self.default

    def routes(self) -> list[Route]:
        """The configured routes (not the default), exact names first."""
        return [*self.exact.values(), *(route for _, route in self.prefixes)]


_tables = TableCache(lambda: load_route_table(), "UPSTREAM_ROUTES_CACHE_SECONDS")


def route_for_model(model: str) -> Route:
    return route_table().route_for(model)


def remembered_route_for_model(model: str) -> Route | None:
    """The route from the table in memory, or None when it must be read again (from an
    event loop, which must not wait for the database)."""
    table = _tables.remembered()
    return None if table is None else table.route_for(model)


def route_table() -> RouteTable:
    """The current table (reloaded from the database when older than the cache TTL)."""
    return _tables.current()


def forget_routes() -> None:
    _tables.forget()


def default_route() -> Route:
    return Route(name=DEFAULT_ROUTE_NAME, base_url=settings.UPSTREAM_BASE_URL,
                 api_key=settings.UPSTREAM_API_KEY,
                 connect_timeout=settings.UPSTREAM_CONNECT_TIMEOUT,
                 idle_timeout=settings.UPSTREAM_TIMEOUT,
                 max_concurrency=settings.UPSTREAM_MAX_CONCURRENCY,
                 context_window=settings.UPSTREAM_CONTEXT_WINDOW or None,
                 token_counter=settings.UPSTREAM_TOKEN_COUNTER,
                 tokenizer_path=settings.UPSTREAM_TOKENIZER_PATH,
                 accepts_images=settings.UPSTREAM_ACCEPTS_IMAGES,
                 passthrough_params=tuple(settings.UPSTREAM_PASSTHROUGH_PARAMS))


def load_route_table() -> RouteTable:
    from .models import UpstreamRoute

    exact, prefixes = {}, []
    for row in UpstreamRoute.objects.filter(enabled=True):
        route = _route_of(row)
        if row.model_pattern.endswith("*"):
            prefixes.append((row.model_pattern[:-1], route))
        else:
            exact[row.model_pattern] = route
    prefixes.sort(key=lambda pair: (-len(pair[0]), pair[0]))  # longest first, then by name
    return RouteTable(exact=exact, prefixes=tuple(prefixes), default=default_route())


def _route_of(row) -> Route:
    problem = None
    try:
        api_key = row.api_key()
    except SecretUnreadable:
        log.error("upstream route %r: its API key does not decrypt with ENCRYPTION_KEYS", row.name)
        api_key, problem = "", f"The API key of upstream route '{row.name}' cannot be decrypted."
    return Route(
        name=row.name, base_url=row.base_url.rstrip("/"), api_key=api_key,
        connect_timeout=row.connect_timeout or settings.UPSTREAM_CONNECT_TIMEOUT,
        idle_timeout=row.read_timeout or settings.UPSTREAM_TIMEOUT,
        headers=tuple(sorted((k.lower(), v) for k, v in (row.extra_headers or {}).items())),
        max_concurrency=row.max_concurrency, pattern=row.model_pattern, problem=problem,
        context_window=row.context_window, token_counter=row.token_counter,
        tokenizer_path=row.tokenizer_path, more_urls=row.replica_url_list(),
        accepts_images=row.accepts_images,
        passthrough_params=tuple(row.passthrough_params or ()),
    )
