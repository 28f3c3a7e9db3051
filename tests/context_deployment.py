"""The deployment of the long-session tests (test_e2e_context*.py) and their helpers.

It routes `fake-echo` to the fake upstream with vLLM's counter and no window (fake-echo is
not in its /v1/models: unknown), and `fake-text` with vLLM's counter and a window of 40
tokens. The fake's /tokenize counts one token per word of the messages as fake-echo renders
them (tests.upstream_scenarios.render_messages)."""
import psycopg
import pytest
from openai import OpenAI

from responses_app.context.summary import COMPACTION_PROMPT
from tests.conftest import production_deployment
from tests.servers import SPARE_REDIS_DB
from tests.upstream_scenarios import render_messages

DEPLOYMENT_SECRET = "test-secret-key-" + "x" * 40  # the deployment's SECRET_KEY (conftest)


@pytest.fixture(scope="module")
def windowed(upstream, tmp_path_factory):
    with production_deployment(upstream, tmp_path_factory, "context", SPARE_REDIS_DB,
                               COMPACTION_KEEP_USER_CHARS="40") as deployment:
        deployment.manage("upstream_route", "set", "echo", "--model", "fake-echo",
                          "--base-url", upstream.base_url, "--token-counter", "vllm")
        deployment.manage("upstream_route", "set", "small", "--model", "fake-text",
                          "--base-url", upstream.base_url, "--token-counter", "vllm",
                          "--context-window", "40")
        yield deployment


@pytest.fixture(scope="module")
def keys(windowed):
    return windowed.new_api_key("carol"), windowed.new_api_key("erin")


@pytest.fixture
def api(windowed, keys):
    with windowed.client(keys[0]) as client:
        yield client


@pytest.fixture
def sdk(windowed, keys):
    return OpenAI(base_url=windowed.base_url, api_key=keys[0], max_retries=0)


def stored_rows(deployment) -> list:
    with psycopg.connect(deployment.env["DATABASE_URL"]) as connection:
        return connection.execute(
            "SELECT id, status, input_items, resource FROM responses ORDER BY id").fetchall()


def chats(upstream) -> list[dict]:
    return [r["body"] for r in upstream.requests() if r["path"] == "/v1/chat/completions"]


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def summary_of(messages: list[dict]) -> str:
    """What fake-echo answers the summary request of these messages with."""
    return render_messages([*messages, user(COMPACTION_PROMPT)]).strip()




def is_unfinished_here(item: dict) -> bool:
    """Whether `item` is a compaction this deployment closed unfinished (its SECRET_KEY)."""
    from django.test import override_settings

    from responses_app.context.compaction_items import is_unfinished

    with override_settings(SECRET_KEY=DEPLOYMENT_SECRET):
        return is_unfinished(item)
