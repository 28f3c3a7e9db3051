"""The usage of an upstream call cut before it reported one (a steered run): what the model
generated of each output item kind, counted with the route's counter or, when the counter
fails, the estimate (UTF-8 bytes / 4). Pure but for a refused loopback connection."""
import socket

from responses_app.context.cut_usage import cut_usage, generated_text
from upstreams.routing import Route
from upstreams.token_counting import render_chat

ITEMS = [
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think "}]},
    {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "hello "}, {"type": "refusal", "refusal": "no "}]},
    {"type": "function_call", "name": "f", "arguments": '{"a": 1}'},
    {"type": "custom_tool_call", "name": "patch", "input": "*** Begin"},
    {"type": "shell_call", "action": {"commands": ["ls"]}},
    {"type": "mcp_list_tools", "tools": []},  # the gateway's, not generated: nothing
]
BODY = {"model": "m", "messages": [{"role": "user", "content": "twelve bytes"}]}


def test_the_generated_text_of_each_item_kind():
    assert generated_text(ITEMS) == 'think hello no {"a": 1}*** Begin{"commands":["ls"]}'


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_cut_call_is_counted_by_the_estimate_when_its_counter_fails():
    route = Route(name="r", base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="",
                  connect_timeout=1, idle_timeout=1, token_counter="vllm")
    prompt = -(-len(render_chat(BODY).encode()) // 4)  # "<|user|>\ntwelve bytes": 21 bytes
    assert (prompt, cut_usage(route, BODY, ITEMS)) == (
        6, {"prompt_tokens": 6, "completion_tokens": 13, "total_tokens": 19})  # 51 bytes
    assert cut_usage(route, BODY, []) == {"prompt_tokens": 6, "completion_tokens": 0,
                                          "total_tokens": 6}
