"""The compaction summary's request: the conversation as the upstream would receive it, then
COMPACTION_PROMPT as the last user message, to the route's model. It is streamed as a turn
is (responses_app/worker/summary_call.py makes the call through the worker's upstream
client: the route's retries, replicas and concurrency limit, a cancel closing it); the
summary is its streamed content joined, the summary the compaction item seals."""
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
    """The upstream request that asks for the summary of `chat_body`'s messages (streamed,
    with its usage in the last chunk, as a turn's request)."""
    return {"model": chat_body["model"],
            "messages": [*chat_body["messages"], {"role": "user", "content": COMPACTION_PROMPT}],
            "stream": True, "stream_options": {"include_usage": True}}
