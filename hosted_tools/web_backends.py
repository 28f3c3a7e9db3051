"""The search backends `web_search` runs on: SearXNG's JSON API, the Brave Search API and
Tavily's search API. Each turns a `WebQuery` into an HTTP request and the backend's JSON
answer into `WebResult`s. Pure (no I/O): the request is made by hosted_tools.web_search.

SearXNG: `GET <WEB_SEARCH_URL>/search?q=…&format=json` (the instance must enable the json
format), answering `{"query", "number_of_results", "results": [{"url", "title", "content",
"engine", …}], "answers", "infoboxes", "suggestions", …}`; it has no result count or location
parameter (results are cut here; `language` is the location's country when given).
Brave: `GET <WEB_SEARCH_URL or https://api.search.brave.com/res/v1>/web/search?q=…&count=N`
with `X-Subscription-Token`, answering `{"type": "search", "query": {…}, "web": {"results":
[{"title", "url", "description", "extra_snippets", …}]}, …}`; the user's location goes as
`country` and Brave's `X-Loc-*` headers.
Tavily: `POST <WEB_SEARCH_URL or https://api.tavily.com>/search` with `Authorization: Bearer
<key>` and a JSON body `{"query", "topic": "general", "search_depth", "max_results",
"include_domains", "country", …}`, answering `{"query", "answer", "images", "results":
[{"title", "url", "content", "score", "raw_content"}], "response_time", "request_id", …}`;
`search_depth` is "advanced" for search_context_size high (2 credits), else "basic"; the
allowed domains go as `include_domains` (not as `site:` operators); the location's country
as Tavily's country name (hosted_tools.tavily_countries), the rest of it is not sent.
"""
import html
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from responses_app.translation.hosted_items import WebResult

from .tavily_countries import TAVILY_COUNTRIES

BRAVE_URL = "https://api.search.brave.com/res/v1"
BRAVE_MAX_COUNT = 20
TAVILY_URL = "https://api.tavily.com"
TAVILY_DEPTHS = {"low": "basic", "medium": "basic", "high": "advanced"}
TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class WebQuery:
    query: str
    count: int                  # results wanted
    text_chars: int             # text kept per result
    allowed_domains: tuple = ()
    location: dict | None = None  # user_location: city, country, region, timezone
    context_size: str = "medium"  # search_context_size: low, medium, high


@dataclass(frozen=True)
class HttpRequest:
    url: str
    params: dict
    headers: dict
    method: str = "GET"
    json: dict | None = None  # the body of a POST


class BackendAnswerInvalid(Exception):
    """The backend answered something that is not its JSON shape."""


def backend_query(query: WebQuery) -> str:
    """The query sent: with `site:` operators for the allowed domains (results are also
    filtered by domain afterwards, whatever the backend makes of the operators)."""
    if not query.allowed_domains:
        return query.query
    sites = " OR ".join(f"site:{domain}" for domain in query.allowed_domains)
    return f"{query.query} ({sites})" if len(query.allowed_domains) > 1 else \
        f"{query.query} {sites}"


def searxng_request(base_url: str, api_key: str, query: WebQuery) -> HttpRequest:
    params = {"q": backend_query(query), "format": "json", "pageno": "1"}
    country = (query.location or {}).get("country")
    if country:
        params["language"] = f"all-{country.upper()}"
    headers = {"Accept": "application/json"}
    if api_key:  # an instance behind a proxy that wants a bearer token
        headers["Authorization"] = f"Bearer {api_key}"
    return HttpRequest(url=f"{base_url.rstrip('/')}/search", params=params, headers=headers)


def searxng_results(answer, query: WebQuery) -> list[WebResult]:
    if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
        raise BackendAnswerInvalid("the SearXNG answer has no 'results' list")
    return _kept([(r.get("title"), r.get("url"), r.get("content"))
                  for r in answer["results"] if isinstance(r, dict)], query)


def brave_request(base_url: str, api_key: str, query: WebQuery) -> HttpRequest:
    params = {"q": backend_query(query), "count": str(min(query.count * 2, BRAVE_MAX_COUNT)),
              "extra_snippets": "true", "text_decorations": "false"}
    headers = {"Accept": "application/json", "X-Subscription-Token": api_key}
    location = query.location or {}
    if location.get("country"):
        params["country"] = location["country"].upper()
    for field, header in (("city", "X-Loc-City"), ("region", "X-Loc-State-Name"),
                          ("country", "X-Loc-Country"), ("timezone", "X-Loc-Timezone")):
        if location.get(field):
            headers[header] = location[field]
    return HttpRequest(url=f"{(base_url or BRAVE_URL).rstrip('/')}/web/search", params=params,
                       headers=headers)


def brave_results(answer, query: WebQuery) -> list[WebResult]:
    web = answer.get("web") if isinstance(answer, dict) else None
    if not isinstance(answer, dict) or answer.get("type") != "search":
        raise BackendAnswerInvalid("the Brave answer is not a search response")
    results = (web or {}).get("results") or []
    return _kept([(r.get("title"), r.get("url"), " ".join(
        [r.get("description") or "", *(r.get("extra_snippets") or ())]))
        for r in results if isinstance(r, dict)], query)


def tavily_request(base_url: str, api_key: str, query: WebQuery) -> HttpRequest:
    body = {"query": query.query, "topic": "general",
            "search_depth": TAVILY_DEPTHS[query.context_size],
            "max_results": query.count, "include_answer": False, "include_raw_content": False}
    if query.allowed_domains:
        body["include_domains"] = list(query.allowed_domains)
    country = TAVILY_COUNTRIES.get(((query.location or {}).get("country") or "").upper())
    if country:
        body["country"] = country
    return HttpRequest(url=f"{(base_url or TAVILY_URL).rstrip('/')}/search", params={},
                       headers={"Accept": "application/json",
                                "Authorization": f"Bearer {api_key}"},
                       method="POST", json=body)


def tavily_results(answer, query: WebQuery) -> list[WebResult]:
    if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
        raise BackendAnswerInvalid("the Tavily answer has no 'results' list")
    return _kept([(r.get("title"), r.get("url"), r.get("content"))
                  for r in answer["results"] if isinstance(r, dict)], query)


BACKENDS = {"searxng": (searxng_request, searxng_results),
            "brave": (brave_request, brave_results),
            "tavily": (tavily_request, tavily_results)}


def _kept(rows, query: WebQuery) -> list[WebResult]:
    """The first `count` results with a URL in the allowed domains, text cut to size."""
    kept, seen = [], set()
    for title, url, text in rows:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        if url in seen or not _allowed(url, query.allowed_domains):
            continue
        seen.add(url)
        text = " ".join(html.unescape(TAGS.sub("", text or "")).split())
        if len(text) > query.text_chars:
            text = text[:query.text_chars + 1].rsplit(" ", 1)[0] + " …"  # whole words
        kept.append(WebResult(title=str(title or url), url=url, text=text))
        if len(kept) == query.count:
            break
    return kept


def _allowed(url: str, domains: tuple) -> bool:
    if not domains:
        return True
    host = (urlsplit(url).hostname or "").lower()
    return any(host == d or host.endswith("." + d) for d in domains)
