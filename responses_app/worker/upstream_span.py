"""The trace span of one upstream call (a chat completion), with OpenTelemetry's GenAI
semantic-convention attributes: the request's model and parameters on start; the upstream's
completion id, model, finish reasons and token usage as its chunks pass.

The upstream client (http_stream) is the project's own, so this span is written here; it
is a child of the run's span (run_queue.py) and the parent of nothing. Off, `chat_span`
yields None and the chunks pass untouched.
"""
from contextlib import contextmanager
from urllib.parse import urlsplit

from observability import tracing

# Chat Completions request parameters and their GenAI attribute names.
REQUEST_PARAMETERS = {"max_completion_tokens": "gen_ai.request.max_tokens",
                      "max_tokens": "gen_ai.request.max_tokens",
                      "temperature": "gen_ai.request.temperature",
                      "top_p": "gen_ai.request.top_p",
                      "frequency_penalty": "gen_ai.request.frequency_penalty",
                      "presence_penalty": "gen_ai.request.presence_penalty",
                      "seed": "gen_ai.request.seed"}


def request_attributes(base_url: str, body: dict) -> dict:
    """The span's attributes known before the call."""
    url = urlsplit(base_url)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                  "gen_ai.provider.name": "openai", "gen_ai.request.model": body["model"],
                  "server.address": url.hostname or "",
                  "server.port": url.port or (443 if url.scheme == "https" else 80)}
    for name, attribute in REQUEST_PARAMETERS.items():
        if body.get(name) is not None:
            attributes[attribute] = body[name]
    return attributes


@contextmanager
def chat_span(base_url: str, body: dict):
    """A client span around one upstream call: yields a ChatObserver, or None when off."""
    if not tracing.active():
        yield None
        return
    with tracing.client_span(f"chat {body['model']}", request_attributes(base_url, body)) as span:
        yield ChatObserver(span)


class ChatObserver:
    """Sets the response's attributes on the span from the chunks it sees."""

    def __init__(self, span):
        self.span = span
        self.identified = False
        self.finish_reasons: list[str] = []

    def placed(self, placement) -> None:
        """The replica that took the call (upstreams.pool), and its chain's affinity."""
        self.span.set_attribute("gateway.upstream.replica", placement.replica or "")
        self.span.set_attribute("gateway.upstream.affinity", placement.outcome)
        self.span.set_attribute("gateway.upstream.failovers", placement.failovers)
        url = urlsplit(placement.replica or "")
        if url.hostname:
            self.span.set_attribute("server.address", url.hostname)
            self.span.set_attribute("server.port",
                                    url.port or (443 if url.scheme == "https" else 80))

    async def batches(self, batches):
        """The upstream's chunk batches, unchanged, observed on the way."""
        async for chunks in batches:
            for chunk in chunks:
                self.observe(chunk)
            yield chunks
        if self.finish_reasons:
            self.span.set_attribute("gen_ai.response.finish_reasons", self.finish_reasons)

    def observe(self, chunk: dict) -> None:
        if not self.identified and chunk.get("id"):
            self.identified = True
            self.span.set_attribute("gen_ai.response.id", chunk["id"])
            if chunk.get("model"):
                self.span.set_attribute("gen_ai.response.model", chunk["model"])
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason"):
                self.finish_reasons.append(choice["finish_reason"])
        usage = chunk.get("usage")
        if usage:
            self.span.set_attribute("gen_ai.usage.input_tokens", usage.get("prompt_tokens", 0))
            self.span.set_attribute("gen_ai.usage.output_tokens",
                                    usage.get("completion_tokens", 0))
