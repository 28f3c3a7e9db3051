"""web_search's backends over real HTTP on loopback: the exact request each backend gets
(query with site: operators or Tavily's include_domains, count, search depth, location,
key), its real answer shape made into results (cut to the context size, filtered to the
allowed domains), and each failure a clear message (refused by the egress guard, HTTP
error, an answer that is not JSON). The backend here is the WEB_SEARCH_* settings' (no
backend in the admin); tests/test_web_search_admin.py has the admin's."""
import asyncio

import pytest

from hosted_tools.backend_table import backend_table
from hosted_tools.web_search import SearchFailed, search_web
from responses_app.translation.hosted_items import WebResult
from tests.fake_search import BRAVE_KEY, PAGES, TAVILY_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def searxng(fake_search, settings):
    fake_search.clear()
    settings.WEB_SEARCH_BACKEND = "searxng"
    settings.WEB_SEARCH_URL = fake_search.searxng_url
    settings.WEB_SEARCH_API_KEY = ""
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = ["127.0.0.1/32"]
    return fake_search


@pytest.fixture
def brave(fake_search, settings):
    fake_search.clear()
    settings.WEB_SEARCH_BACKEND = "brave"
    settings.WEB_SEARCH_URL = fake_search.brave_url
    settings.WEB_SEARCH_API_KEY = BRAVE_KEY
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = ["127.0.0.1/32"]
    return fake_search


@pytest.fixture
def tavily(fake_search, settings):
    fake_search.clear()
    settings.WEB_SEARCH_BACKEND = "tavily"
    settings.WEB_SEARCH_URL = fake_search.tavily_url
    settings.WEB_SEARCH_API_KEY = TAVILY_KEY
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = ["127.0.0.1/32"]
    return fake_search


def search(tool, query="python 3.14", tenant_id=1):
    backend_table()  # read here, on the test's database connection; the search reuses it
    return asyncio.run(search_web({"type": "web_search", **tool}, query, tenant_id))


def test_searxng_low_context_three_results_cut_short(searxng):
    results = search({"search_context_size": "low"})
    assert results == [WebResult(title, url, text) for title, url, text in PAGES]
    assert [r["params"] for r in searxng.requests()] == [
        {"q": "python 3.14", "format": "json", "pageno": "1"}]


def test_searxng_allowed_domains_and_location(searxng):
    results = search({"search_context_size": "medium",
                      "filters": {"allowed_domains": ["python.org"]},
                      "user_location": {"type": "approximate", "country": "fr", "city": "Lyon"}})
    assert [r.url for r in results] == [PAGES[0][1], PAGES[1][1]]
    assert searxng.requests()[0]["params"] == {
        "q": "python 3.14 site:python.org", "format": "json", "pageno": "1",
        "language": "all-FR"}


def test_text_is_cut_at_a_word_to_the_context_size(searxng, settings):
    from hosted_tools import web_search

    original = web_search.CONTEXT_SIZES
    web_search.CONTEXT_SIZES = {**original, "low": (1, 20)}
    try:
        assert search({"search_context_size": "low"}) == [
            WebResult(PAGES[0][0], PAGES[0][1], "Python 3.14.0 is the …")]
    finally:
        web_search.CONTEXT_SIZES = original


def test_brave_request_and_answer(brave):
    results = search({"search_context_size": "high",
                      "filters": {"allowed_domains": ["docs.python.org", "example.com"]},
                      "user_location": {"type": "approximate", "country": "de", "city": "Berlin",
                                        "region": "Berlin", "timezone": "Europe/Berlin"}})
    assert results == [
        WebResult(PAGES[1][0], PAGES[1][1], PAGES[1][2] + f" More about {PAGES[1][0]}."),
        WebResult(PAGES[2][0], PAGES[2][1], PAGES[2][2] + f" More about {PAGES[2][0]}.")]
    [request] = brave.requests()
    assert request["path"] == "/res/v1/web/search"
    assert request["params"] == {
        "q": "python 3.14 (site:docs.python.org OR site:example.com)", "count": "20",
        "extra_snippets": "true", "text_decorations": "false", "country": "DE"}
    assert {k: v for k, v in request["headers"].items() if k.startswith("x-")} == {
        "x-subscription-token": BRAVE_KEY, "x-loc-city": "Berlin", "x-loc-state-name": "Berlin",
        "x-loc-country": "de", "x-loc-timezone": "Europe/Berlin"}


def test_brave_strips_its_markup(brave):
    assert search({"search_context_size": "low"})[0].text == (
        PAGES[0][2] + f" More about {PAGES[0][0]}.")


def test_a_refused_key_is_a_clear_failure(brave, settings):
    settings.WEB_SEARCH_API_KEY = "wrong"
    with pytest.raises(SearchFailed, match="^the search backend answered HTTP 401$"):
        search({})


def test_an_answer_that_is_not_json_fails_clearly(searxng, settings):
    settings.WEB_SEARCH_URL = searxng.base_url + "/broken"
    with pytest.raises(SearchFailed) as failed:
        search({})
    assert str(failed.value).startswith("the search backend's answer is not valid (")


def test_the_egress_guard_refuses_a_private_backend(searxng, settings):
    settings.WEB_SEARCH_EGRESS_ALLOWLIST = []
    with pytest.raises(SearchFailed) as failed:
        search({})
    assert str(failed.value) == ("the search backend may not be reached: 127.0.0.1 is not a "
                                 "globally routable address")
    assert searxng.requests() == []


def test_tavily_request_and_answer(tavily):
    results = search({"search_context_size": "high",
                      "filters": {"allowed_domains": ["python.org"]},
                      "user_location": {"type": "approximate", "country": "GB",
                                        "city": "London", "region": None, "timezone": None}})
    assert results == [WebResult(*PAGES[0]), WebResult(*PAGES[1])]
    [request] = tavily.requests()
    assert (request["method"], request["path"], request["params"]) == (
        "POST", "/tavily/search", {})
    assert request["body"] == {
        "query": "python 3.14", "topic": "general", "search_depth": "advanced",
        "max_results": 10, "include_answer": False, "include_raw_content": False,
        "include_domains": ["python.org"], "country": "united kingdom"}
    assert (request["headers"]["authorization"], request["headers"]["content-type"]) == (
        f"Bearer {TAVILY_KEY}", "application/json")


def test_tavily_low_context_is_a_basic_search_without_an_unknown_country(tavily):
    results = search({"search_context_size": "low",
                      "user_location": {"type": "approximate", "country": "XK"}})
    assert results == [WebResult(*page) for page in PAGES]
    assert [r["body"] for r in tavily.requests()] == [{
        "query": "python 3.14", "topic": "general", "search_depth": "basic",
        "max_results": 3, "include_answer": False, "include_raw_content": False}]


def test_tavily_refusing_the_key_is_a_clear_failure(tavily, settings):
    settings.WEB_SEARCH_API_KEY = "tvly-wrong"
    with pytest.raises(SearchFailed, match="^the search backend answered HTTP 401$"):
        search({})
