"""Fake web search backends on 127.0.0.1: SearXNG's JSON API (`GET /search?format=json`),
the Brave Search API (`GET /res/v1/web/search`) and Tavily's (`POST /tavily/search`, a JSON
body), answering in their real response shapes (fields as the services document and return
them, values made up), whatever the query, with the same three pages (two on python.org,
one on example.com; Tavily keeps to its `include_domains` and `max_results`, as it does).
Every request is recorded: `requests()` -> `[{"method", "path", "params", "headers",
"body"}]` (body: the JSON a POST sent, else None).

    search = FakeSearch().start(); search.searxng_url; search.brave_url;
    search.tavily_url; search.stop()
"""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import orjson

PAGES = [
    ("Python Release Python 3.14.0", "https://www.python.org/downloads/release/python-3140/",
     "Python 3.14.0 is the newest major release of the Python programming language."),
    ("What's New In Python 3.14", "https://docs.python.org/3/whatsnew/3.14.html",
     "This article explains the new features in Python 3.14, compared to 3.13."),
    ("Example Domain", "https://example.com/",
     "This domain is for use in illustrative examples in documents."),
]
BRAVE_KEY = "brave-test-key"
TAVILY_KEY = "tvly-dev-test-key"


def searxng_answer(query: str) -> dict:
    return {
        "query": query, "number_of_results": 0,
        "results": [{
            "url": url, "title": title, "content": content, "publishedDate": None,
            "thumbnail": "", "engine": "duckduckgo",
            "parsed_url": ["https", urlsplit(url).hostname, urlsplit(url).path, "", "", ""],
            "template": "default.html", "engines": ["duckduckgo", "brave"],
            "positions": [n + 1, n + 2], "score": round(2.0 / (n + 1), 3), "category": "general",
            "priority": ""} for n, (title, url, content) in enumerate(PAGES)],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [query + " download"],
        "unresponsive_engines": [["google", "timeout"]],
    }


def brave_answer(query: str) -> dict:
    return {
        "type": "search",
        "query": {"original": query, "show_strict_warning": False, "is_navigational": False,
                  "is_news_breaking": False, "spellcheck_off": True, "country": "us",
                  "bad_results": False, "should_fallback": False, "postal_code": "",
                  "city": "", "header_country": "", "more_results_available": True,
                  "state": ""},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": n, "all": False}
                                            for n in range(len(PAGES))], "top": [], "side": []},
        "web": {"type": "search", "family_friendly": True, "results": [{
            "title": title, "url": url, "is_source_local": False, "is_source_both": False,
            "description": content.replace("Python", "<strong>Python</strong>", 1),
            "page_age": "2026-10-07T00:00:00", "profile": {
                "name": urlsplit(url).hostname, "url": url, "long_name": urlsplit(url).hostname,
                "img": "https://imgs.search.brave.com/favicon.png"},
            "language": "en", "family_friendly": True, "type": "search_result",
            "subtype": "generic", "is_live": False,
            "meta_url": {"scheme": "https", "netloc": urlsplit(url).hostname,
                         "hostname": urlsplit(url).hostname, "favicon": "",
                         "path": urlsplit(url).path},
            "extra_snippets": [f"More about {title}."]} for title, url, content in PAGES]},
    }


def tavily_answer(body: dict) -> dict:
    """Tavily's answer as its API reference records it (search depth basic or advanced,
    no answer, no images, no raw content asked for)."""
    domains = body.get("include_domains") or ()
    pages = [(title, url, content) for title, url, content in PAGES
             if not domains or any(urlsplit(url).hostname == d
                                   or urlsplit(url).hostname.endswith("." + d)
                                   for d in domains)]
    return {
        "query": body.get("query"), "follow_up_questions": None, "answer": None,
        "images": [],
        "results": [{"url": url, "title": title, "content": content,
                     "score": round(0.9 - n / 10, 2), "raw_content": None}
                    for n, (title, url, content) in enumerate(pages[:body.get("max_results",
                                                                                  5)])],
        "response_time": 1.09, "request_id": "123e4567-e89b-12d3-a456-426614174111",
    }


class FakeSearch:
    def __init__(self):
        self._requests = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _record(self, body=None):
                parts = urlsplit(self.path)
                params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                fake._requests.append({
                    "method": self.command, "path": parts.path, "params": params,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body})
                return parts, params

            def do_POST(self):
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                parts, _ = self._record(body)
                if parts.path != "/tavily/search":
                    self._send(404, {"detail": "Not Found"})
                elif self.headers.get("Authorization") != f"Bearer {TAVILY_KEY}":
                    self._send(401, {"detail": {
                        "error": "Unauthorized: missing or invalid API key."}})
                else:
                    self._send(200, tavily_answer(body))

            def do_GET(self):
                parts, params = self._record()
                if parts.path == "/search" and params.get("format") == "json":
                    self._send(200, searxng_answer(params.get("q", "")))
                elif parts.path == "/res/v1/web/search":
                    if self.headers.get("X-Subscription-Token") != BRAVE_KEY:
                        self._send(401, {"type": "ErrorResponse", "error": {
                            "id": "e1", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID",
                            "detail": "The provided subscription token is invalid."}})
                    else:
                        self._send(200, brave_answer(params.get("q", "")))
                elif parts.path == "/broken/search":
                    self._send(200, b"<html>not json</html>")
                else:
                    self._send(403, b"Forbidden")

            def _send(self, status, body):
                data = body if isinstance(body, bytes) else orjson.dumps(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.searxng_url = self.base_url
        self.brave_url = f"{self.base_url}/res/v1"
        self.tavily_url = f"{self.base_url}/tavily"

    def start(self) -> "FakeSearch":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def requests(self) -> list[dict]:
        return list(self._requests)

    def clear(self) -> None:
        self._requests.clear()
