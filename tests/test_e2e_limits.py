"""Rate limits, quotas and usage on the shared deployment (Daphne, Celery, Postgres, Redis):
many simultaneous requests and exactly the allowed number pass; every /v1 answer carries
the rate-limit headers; the usage rollup equals the sum of the stored responses."""
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import httpx
import orjson
import pytest

from tests.oracles import check_sse_stream
from tests.deployment_setup import provision, wait_for_readiness

RATE_HEADERS = ["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-requests", "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]
DURATION = re.compile(r"\d+ms|(\d+m)?\d+(\.\d+)?s")


# Each test has its own tenant (and limits): {name: (number of keys, limits)}
TENANTS = {
    "rpm": (1, {"requests_per_minute": 5}),
    "runs": (1, {"concurrent_runs": 3}),
    "scopes": (2, {"requests_per_minute": 3, "key_requests_per_minute": 2}),
    "tpm": (1, {"tokens_per_minute": 60}),
    "quota": (1, {"monthly_token_budget": 40}),
    "headers": (1, {"requests_per_minute": 1000, "tokens_per_minute": 100_000}),
    "ledger": (1, {}),
    "bystander": (1, {}),
    "ranges": (1, {}),
}


@pytest.fixture(scope="module")
def deployment(production):
    """The shared deployment: these tenants' limits touch no other tenant."""
    production.limit_test_keys = provision(production, {
        f"limits-{name}": {"keys": keys, "limits": limits}
        for name, (keys, limits) in TENANTS.items()})
    assert wait_for_readiness(production).status_code == 200
    return production


def tenant(deployment, name: str) -> list[str]:
    """The API keys of tenant `name` (see TENANTS)."""
    return deployment.limit_test_keys[f"limits-{name}"]


def client(deployment, key: str) -> httpx.Client:
    return httpx.Client(base_url=deployment.base_url, timeout=30,
                        limits=httpx.Limits(max_connections=64),
                        headers={"Authorization": f"Bearer {key}"})


def simultaneously(api: httpx.Client, bodies: list[dict]) -> list[httpx.Response]:
    """POST every body at once (threads released together by a barrier)."""
    barrier = threading.Barrier(len(bodies))

    def post(body):
        barrier.wait()
        return api.post("/responses", json=body)

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        return list(pool.map(post, bodies))


def error_of(response: httpx.Response) -> dict:
    assert set(response.json()) == {"error"}
    return response.json()["error"]


def test_exactly_the_allowed_requests_per_minute_pass(deployment):
    [key] = tenant(deployment, "rpm")
    with client(deployment, key) as api:
        responses = simultaneously(api, [{"model": "fake-text", "input": "hi"}] * 12)
    assert sorted(r.status_code for r in responses) == [200] * 5 + [429] * 7
    for refused in (r for r in responses if r.status_code == 429):
        error = error_of(refused)
        assert (error["type"], error["code"], error["param"]) == (
            "requests", "rate_limit_exceeded", None)
        assert error["message"].startswith(
            "Rate limit reached for requests per min (RPM) of this organization: limit 5")
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.headers["x-ratelimit-limit-requests"] == "5"
    assert all(r.json()["status"] == "completed" for r in responses if r.status_code == 200)


def test_exactly_the_allowed_concurrent_runs_pass_and_their_slots_come_back(deployment):
    [key] = tenant(deployment, "runs")
    with client(deployment, key) as api:
        # each run waits 4 s for the upstream's first byte: all 8 are admitted meanwhile
        responses = simultaneously(api, [{"model": "fake-slow-4000", "input": "hi"}] * 8)
        assert sorted(r.status_code for r in responses) == [200] * 3 + [429] * 5
        for refused in (r for r in responses if r.status_code == 429):
            assert error_of(refused)["message"] == (
                "Too many concurrent runs for this organization: limit 3. Wait for one to end "
                "and try again.")
            assert refused.headers["retry-after"] == "1"
        # the slots were released when the runs were stored, before their answers were sent
        again = simultaneously(api, [{"model": "fake-text", "input": "hi"}] * 3)
        assert [r.status_code for r in again] == [200] * 3


def test_key_and_tenant_limits_both_hold(deployment):
    first, second = tenant(deployment, "scopes")
    with client(deployment, first) as api:
        statuses = [api.get("/responses/resp_unknown").status_code for _ in range(3)]
        assert statuses == [404, 404, 429]  # the key's limit: 2
        assert "of this API key: limit 2" in api.get("/responses/resp_x").json()["error"][
            "message"]
    with client(deployment, second) as api:
        statuses = [api.get("/responses/resp_unknown").status_code for _ in range(2)]
        assert statuses == [404, 429]  # the tenant's limit: 3, two used by the first key
        assert "of this organization: limit 3" in api.get("/responses/resp_x").json()["error"][
            "message"]


def sized_body(size: int, model: str = "fake-text") -> bytes:
    """A request body of exactly `size` bytes (the admission estimate is size / 4 tokens)."""
    body = orjson.dumps({"model": model, "input": ""})
    return orjson.dumps({"model": model, "input": "x" * (size - len(body))})


def test_tokens_per_minute_charge_an_estimate_then_the_real_usage(deployment):
    [key] = tenant(deployment, "tpm")
    post = {"headers": {"content-type": "application/json"}, "content": sized_body(160)}
    with client(deployment, key) as api:
        # 160 bytes: 40 tokens charged at admission; fake-text really uses 12 + 5 = 17
        first = api.post("/responses", **post)
        assert first.status_code == 200
        assert first.json()["usage"]["total_tokens"] == 17
        assert first.headers["x-ratelimit-limit-tokens"] == "60"
        assert first.headers["x-ratelimit-remaining-tokens"] == "20"
        assert "x-ratelimit-limit-requests" not in first.headers  # no request limit here
        # 17 + 40 fits in 60 only because the first estimate was replaced by its usage
        assert api.post("/responses", **post).status_code == 200
        third = api.post("/responses", **post)  # 17 + 17 + 40 does not
        assert third.status_code == 429
        assert error_of(third)["type"] == "tokens"
        assert error_of(third)["message"].startswith(
            "Rate limit reached for tokens per min (TPM) of this organization: limit 60")
        too_large = api.post("/responses", headers=post["headers"], content=sized_body(400))
        assert too_large.status_code == 429
        assert error_of(too_large)["message"] == (
            "Request too large for tokens per min (TPM) of this organization: limit 60, "
            "requested 100.")
        assert "retry-after" not in too_large.headers


def test_a_spent_monthly_budget_is_insufficient_quota_for_runs_only(deployment):
    [key] = tenant(deployment, "quota")
    with client(deployment, key) as api:
        statuses = [api.post("/responses", json={"model": "fake-text", "input": "hi"})
                    for _ in range(4)]
        assert [r.status_code for r in statuses] == [200, 200, 200, 429]  # 17 tokens each
        error = error_of(statuses[3])
        assert (error["type"], error["code"]) == ("insufficient_quota", "insufficient_quota")
        assert error["message"] == ("You exceeded your monthly token budget (40 tokens). Ask "
                                    "the operator of this gateway to raise it.")
        stream = api.post("/responses", json={"model": "fake-text", "input": "hi",
                                              "stream": True})
        assert stream.status_code == 429
        assert api.get(f"/responses/{statuses[0].json()['id']}").status_code == 200


def assert_rate_headers(response: httpx.Response, requests_limit: str, tokens_limit: str):
    assert response.headers["x-ratelimit-limit-requests"] == requests_limit
    assert response.headers["x-ratelimit-limit-tokens"] == tokens_limit
    for name in RATE_HEADERS:
        assert name in response.headers, (response.request.url, name)
    assert 0 <= int(response.headers["x-ratelimit-remaining-requests"]) < int(requests_limit)
    assert 0 <= int(response.headers["x-ratelimit-remaining-tokens"]) <= int(tokens_limit)
    assert DURATION.fullmatch(response.headers["x-ratelimit-reset-requests"])
    assert DURATION.fullmatch(response.headers["x-ratelimit-reset-tokens"])
    assert response.headers["x-request-id"].startswith("req_")


def test_every_v1_answer_carries_the_rate_limit_headers(deployment):
    [key] = tenant(deployment, "headers")
    with client(deployment, key) as api:
        with api.stream("POST", "/responses", json={"model": "fake-text", "input": "hi",
                                                    "stream": True}) as stream:
            raw = stream.read()
        assert_rate_headers(stream, "1000", "100000")
        events, final = check_sse_stream(raw)
        answers = [
            api.post("/responses", json={"model": "fake-text", "input": "hi"}),
            api.get(f"/responses/{final['id']}"),
            api.get(f"/responses/{final['id']}/input_items"),
            api.get("/models"),
            api.get("/usage"),
            api.get("/responses/resp_missing"),                               # 404
            api.get(f"/responses/{final['id']}/input_items?limit=0"),        # 400
            api.post("/responses", content=b"{not json",
                     headers={"content-type": "application/json"}),           # 400
            api.post("/responses", json={"model": "fake-text"}),             # 400
            api.post("/responses", json={"model": "fake-429", "input": "x"}),  # upstream 429
            api.delete(f"/responses/{final['id']}"),
        ]
        assert [a.status_code for a in answers] == [200, 200, 200, 200, 200, 404, 400, 400,
                                                    400, 429, 200]
        for answer in answers:
            assert_rate_headers(answer, "1000", "100000")
    unauthenticated = httpx.get(deployment.base_url + "/responses/resp_x",
                                headers={"Authorization": "Bearer sk-nope_nope"})
    assert unauthenticated.status_code == 401
    assert "x-ratelimit-limit-requests" not in unauthenticated.headers
    assert unauthenticated.headers["x-request-id"].startswith("req_")


def test_usage_totals_equal_the_sum_of_the_stored_responses(deployment):
    [key] = tenant(deployment, "ledger")
    [other] = tenant(deployment, "bystander")
    with client(deployment, key) as api:
        ids = [api.post("/responses", json={"model": model, "input": "hi"}).json()["id"]
               for model in ("fake-text", "fake-reasoning", "fake-tools")]
        with api.stream("POST", "/responses", json={"model": "fake-reasoning", "input": "hi",
                                                    "stream": True}) as stream:
            ids.append(check_sse_stream(stream.read())[1]["id"])
        ids += [r.json()["id"] for r in simultaneously(
            api, [{"model": "fake-text", "input": "hi"}] * 8)]
        unstored = api.post("/responses", json={"model": "fake-text", "input": "hi",
                                                "store": False}).json()
        api.post("/responses", json={"model": "fake-500", "input": "hi"})  # rejected: no usage
        stored = [api.get(f"/responses/{i}").json() for i in ids]
        expected = {}
        for response in [*stored, unstored]:
            usage = response["usage"]
            totals = expected.setdefault(response["model"], Counter())
            totals.update({
                "num_model_requests": 1,
                "input_tokens": usage["input_tokens"],
                "input_cached_tokens": usage["input_tokens_details"]["cached_tokens"],
                "output_tokens": usage["output_tokens"],
                "output_reasoning_tokens": usage["output_tokens_details"]["reasoning_tokens"],
            })
        page = api.get("/usage").json()
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    assert page["object"] == "page" and page["has_more"] is False
    assert len(page["data"]) == 7
    bucket = page["data"][-1]
    assert (bucket["start_time"], bucket["end_time"]) == (int(today.timestamp()),
                                                          int(today.timestamp()) + 86400)
    assert all(b["results"] == [] for b in page["data"][:-1])
    assert {r["model"]: {k: v for k, v in r.items() if k not in ("object", "model")}
            for r in bucket["results"]} == {m: dict(c) for m, c in expected.items()}
    assert expected["fake-text"]["num_model_requests"] == 10
    assert expected["fake-reasoning"]["output_reasoning_tokens"] == 8
    with client(deployment, other) as api:
        assert all(b["results"] == [] for b in api.get("/usage").json()["data"])


@pytest.mark.parametrize("query, param", [
    ("start=yesterday", "start"),
    ("start=2026-01-10&end=2026-01-10", "start"),
    ("start=2024-01-01&end=2026-01-01", "end"),
])
def test_bad_usage_ranges_are_400(deployment, query, param):
    [key] = tenant(deployment, "ranges")
    with client(deployment, key) as api:
        response = api.get(f"/usage?{query}")
    assert response.status_code == 400
    error = error_of(response)
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error", "invalid_value", param)
