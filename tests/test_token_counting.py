"""Token counting per upstream route (upstreams/token_counting.py): a local tokenizer.json,
the upstream's own /tokenize (vLLM's and llama.cpp's, on the fake upstream over HTTP), the
labelled estimate, and the context window (vLLM's max_model_len when the route has none)."""
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from tests.fake_upstream import COMPACTED_MARK, FAKE_COUNT_FAILURE, FAKE_MAX_MODEL_LEN
from upstreams.routing import Route
from upstreams.token_counting import (CountFailed, TokenCount, context_window,
                                      count_chat_tokens, count_text, forget_windows,
                                      render_chat)

TEXT = "the quick brown fox jumps over the lazy dog, twice: the quick brown fox"
CHAT = {"model": "fake-echo", "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "the quick brown fox"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a lazy dog"}]}


def make_tokenizer_file(path) -> Tokenizer:
    """A small word-level tokenizer saved as tokenizer.json (the format the library reads)."""
    words = sorted(set(TEXT.replace(",", " ").replace(":", " ").split()))
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(path))
    return tokenizer


def route(counter: str, base_url: str = "http://127.0.0.1:9/v1", **fields) -> Route:
    return Route(name="r", base_url=base_url, api_key="", connect_timeout=2, idle_timeout=5,
                 token_counter=counter, **fields)


def test_it_counts_with_a_local_tokenizer_json_as_the_tokenizer_does(tmp_path):
    path = tmp_path / "tokenizer.json"
    tokenizer = make_tokenizer_file(path)
    counted = count_text(route("tokenizer", tokenizer_path=str(path)), TEXT)
    assert counted == TokenCount(len(tokenizer.encode(TEXT).ids), "tokenizer")
    assert counted.tokens == 16  # 14 words, a comma and a colon
    chat = count_chat_tokens(route("tokenizer", tokenizer_path=str(path)), CHAT)
    assert chat == TokenCount(len(tokenizer.encode(render_chat(CHAT)).ids), "tokenizer")


def test_it_renders_a_chat_request_for_the_local_counters():
    assert render_chat(CHAT) == (
        "<|system|>\nBe brief.\n<|user|>\nthe quick brown fox\n<|assistant|>\n"
        '{"name":"look","arguments":"{}"}\n<|tool|>\na lazy dog')


def test_it_labels_the_byte_estimate():
    assert count_text(route("estimate"), "abcdefgh") == TokenCount(2, "estimate")
    assert count_text(route("estimate"), "abcdefghi") == TokenCount(3, "estimate")
    assert count_text(route("estimate"), "é") == TokenCount(1, "estimate")


def test_it_asks_vllm_tokenize_with_the_chat_messages(clean_upstream):
    counted = count_chat_tokens(route("vllm", clean_upstream.base_url), CHAT)
    # the fake counts the words of the messages as fake-echo renders them
    assert counted == TokenCount(14, "vllm")
    assert [r["body"] for r in clean_upstream.requests()] == [
        {"model": "fake-echo", "messages": CHAT["messages"], "add_generation_prompt": True}]


def test_it_asks_llama_cpp_tokenize_with_the_rendered_text(clean_upstream):
    counted = count_chat_tokens(route("llamacpp", clean_upstream.base_url), CHAT)
    assert counted == TokenCount(len(render_chat(CHAT).split()), "llamacpp")
    assert [r["body"] for r in clean_upstream.requests()] == [
        {"content": render_chat(CHAT), "add_special": False}]


def test_a_tokenize_that_fails_is_count_failed_naming_the_route_and_the_status(
        clean_upstream):
    """The fake's /tokenize answers 500 on these marks: the failure says which route's call
    failed and how (its status, not httpx's text with the upstream's URL)."""
    chat = {"model": "fake-echo", "messages": [
        {"role": "user", "content": f"{FAKE_COUNT_FAILURE} {COMPACTED_MARK}"}]}
    with pytest.raises(CountFailed) as failed:
        count_chat_tokens(route("vllm", clean_upstream.base_url), chat)
    assert str(failed.value) == "upstream route 'r': /tokenize answered HTTP 500"


@pytest.mark.parametrize("counter, window, expected", [
    ("vllm", None, FAKE_MAX_MODEL_LEN),  # vLLM's max_model_len from /v1/models
    ("vllm", 1000, 1000),  # the route's setting wins
    ("estimate", 500, 500),
    ("estimate", None, None),  # unknown: today's behaviour
])
def test_it_knows_the_context_window(upstream, counter, window, expected):
    forget_windows()
    assert context_window(route(counter, upstream.base_url, context_window=window),
                          "fake-text") == expected
