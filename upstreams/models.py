"""Upstream routes: a model name or prefix → the Chat Completions server that serves it.

Requests whose model matches no route go to the deployment default (UPSTREAM_BASE_URL).
The API key is stored encrypted (upstreams.secrets); nothing reads it but the router.
"""
import re

from django.core.exceptions import ValidationError
from django.db import models

from . import secrets

TOKEN_COUNTERS = [
    ("estimate", "Estimate: UTF-8 bytes / 4, labelled as an estimate"),
    ("tokenizer", "Local tokenizer.json (Hugging Face tokenizers)"),
    ("vllm", "The upstream's /tokenize (vLLM: chat messages)"),
    ("llamacpp", "The upstream's /tokenize (llama.cpp: text)"),
]
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def validate_base_url(value: str) -> None:
    """An http(s) URL (service names without a dot, like `http://vllm:8000/v1`, allowed)."""
    if not re.match(r"^https?://[^/\s]+(/\S*)?$", value):
        raise ValidationError("Enter an http:// or https:// URL, e.g. http://vllm:8000/v1.")


def validate_replica_urls(value: str) -> None:
    """One http(s) URL per line (blank lines ignored)."""
    for line in value.splitlines():
        if line.strip():
            validate_base_url(line.strip())


def validate_extra_headers(value) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and HEADER_NAME.match(name) and isinstance(v, str)
        and "\r" not in v and "\n" not in v
        for name, v in value.items()
    ):
        raise ValidationError('Extra headers must be an object of header names to strings, '
                              'e.g. {"x-org": "acme"}.')


# Create parameters a backend may take as they are (OpenAI's own Chat Completions does).
PASSTHROUGH_PARAMS = ("prompt_cache_key", "prompt_cache_retention", "service_tier",
                      "safety_identifier")


def validate_passthrough_params(value) -> None:
    if not isinstance(value, list) or not all(v in PASSTHROUGH_PARAMS for v in value):
        raise ValidationError("Enter a list of parameter names among: "
                              + ", ".join(PASSTHROUGH_PARAMS) + ".")


def validate_model_pattern(value: str) -> None:
    if not value or "*" in value[:-1] or value == "*":
        raise ValidationError("Enter a model name, or a prefix followed by one '*' (e.g. gpt-*).")


class UpstreamRoute(models.Model):
    name = models.CharField(max_length=100, unique=True)
    model_pattern = models.CharField(
        max_length=200, unique=True, validators=[validate_model_pattern],
        help_text="A model name (exact match), or a prefix ending in '*' such as 'gpt-*'. "
                  "An exact match wins over a prefix, a longer prefix over a shorter one.")
    base_url = models.CharField(max_length=500, validators=[validate_base_url],
                                help_text="The Chat Completions server, ending in /v1.")
    replica_urls = models.TextField(
        blank=True, default="", validators=[validate_replica_urls],
        help_text="More base URLs of the same model server (replicas), one per line: calls "
                  "spread by least in flight, a failed replica is skipped for a cool-down, a "
                  "conversation stays on its replica (its prefix cache). Empty: base URL only.")
    api_key_encrypted = models.TextField(blank=True, default="", editable=False)
    connect_timeout = models.FloatField(
        null=True, blank=True, help_text="Seconds; empty: UPSTREAM_CONNECT_TIMEOUT.")
    read_timeout = models.FloatField(
        null=True, blank=True,
        help_text="Seconds without a byte before a run fails; empty: UPSTREAM_TIMEOUT.")
    extra_headers = models.JSONField(default=dict, blank=True,
                                     validators=[validate_extra_headers])
    max_concurrency = models.PositiveIntegerField(
        default=0, help_text="Open upstream streams of this route across the deployment (every "
                             "worker, every replica); 0: no limit.")
    context_window = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="The model's context window in tokens; empty: read vLLM's max_model_len "
                  "from the upstream's /v1/models when the counter is 'vllm', else unknown.")
    token_counter = models.CharField(
        max_length=20, choices=TOKEN_COUNTERS, default="estimate",
        help_text="How input tokens are counted for this route (input_tokens, truncation, "
                  "compaction thresholds).")
    tokenizer_path = models.CharField(
        max_length=500, blank=True, default="",
        help_text="A local tokenizer.json (Hugging Face tokenizers), for the 'tokenizer' counter.")
    accepts_images = models.BooleanField(
        default=True, help_text="The model takes image parts. Off: images (in messages and "
                                "tool outputs) reach it as text naming them.")
    passthrough_params = models.JSONField(
        default=list, blank=True, validators=[validate_passthrough_params],
        help_text="Create parameters sent on to this backend as they are, e.g. "
                  '["prompt_cache_key", "service_tier"]. Choices: '
                  + ", ".join(PASSTHROUGH_PARAMS) + ".")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "upstream_routes"
        ordering = ["model_pattern"]

    def __str__(self):
        return f"{self.name} ({self.model_pattern} → {self.base_url})"

    def replica_url_list(self) -> tuple[str, ...]:
        """The replicas beyond `base_url`, in order, without duplicates."""
        base = self.base_url.rstrip("/")
        urls = []
        for line in self.replica_urls.splitlines():
            url = line.strip().rstrip("/")
            if url and url != base and url not in urls:
                urls.append(url)
        return tuple(urls)

    def set_api_key(self, plaintext: str) -> None:
        self.api_key_encrypted = secrets.encrypt(plaintext) if plaintext else ""

    def api_key(self) -> str:
        return secrets.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""
