"""The compaction summary: one non-streamed Chat Completions call to the route's model with
the conversation as the upstream would receive it, then COMPACTION_PROMPT as the last user
message. Its answer is the summary the compaction item seals. Direct to the route's URL,
as the chat stream goes (no environment proxy: docs/configuration.md, "Proxies")."""
import httpx
import orjson

from upstreams.routing import Route

from ..errors import APIError

COMPACTION_PROMPT = (
    "You are compacting the conversation above so that it can continue with less context. "
    "Write a concise summary that keeps everything needed to go on: the user's goals and "
    "constraints, decisions made, facts and results learned (tool results included), the "
    "current state of the work and what remains to be done. Write it as notes for "
    "yourself; do not answer the last message, do not add anything new.")


class SummaryFailed(APIError):
    status = 502
    type = "server_error"
    code = "upstream_error"


def summary_request(chat_body: dict) -> dict:
    """The upstream request that asks for the summary of `chat_body`'s messages."""
    return {"model": chat_body["model"],
            "messages": [*chat_body["messages"], {"role": "user", "content": COMPACTION_PROMPT}],
            "stream": False}


def summarize(route: Route, chat_body: dict) -> tuple[str, dict | None]:
    """(the summary, the upstream's chat usage) of the conversation in `chat_body`."""
    if route.problem:
        raise SummaryFailed(route.problem, code="upstream_misconfigured")
    try:
        with httpx.Client(timeout=httpx.Timeout(route.idle_timeout,
                                                connect=route.connect_timeout),
                          trust_env=False) as client:  # direct, as every upstream call
            reply = client.post(f"{route.base_url}/chat/completions",
                                content=orjson.dumps(summary_request(chat_body)),
                                headers={"content-type": "application/json",
                                         **route.request_headers()})
    except httpx.HTTPError as exc:
        raise SummaryFailed(f"The upstream model server could not summarize: {exc!s}.") from None
    try:
        answer = orjson.loads(reply.content)
        summary = answer["choices"][0]["message"]["content"] if reply.status_code < 400 else None
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        summary = None
    if not isinstance(summary, str):
        raise SummaryFailed(f"The upstream model server failed to summarize "
                            f"(HTTP {reply.status_code}): {reply.text[:300]}")
    return summary.strip(), answer.get("usage")
