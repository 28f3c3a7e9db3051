"""What a run tells its translator (state_machine.ResponseTranslator): how to name items,
which tools its calls stand for, what the client asked to see. Pure data."""
import time
from dataclasses import dataclass, field


@dataclass
class TranslatorOptions:
    ids: "callable"                      # prefix -> new id
    reasoning_as_summary: bool = False   # Codex shows reasoning only as summary events
    include_logprobs: bool = False
    # upstream function name -> (name, namespace) for flattened namespace tools
    function_names: dict = field(default_factory=dict)
    # reasoning item -> opaque token, when the client asked for reasoning.encrypted_content
    seal_reasoning: "callable | None" = None
    # upstream function name -> McpToolTarget for tools the gateway runs
    mcp_tools: dict = field(default_factory=dict)
    # upstream function name -> hosted tool kind ("web_search", "file_search") the gateway runs
    hosted_tools: dict = field(default_factory=dict)
    # the request's `include`, for what hosted call items show of their results
    hosted_include: frozenset = frozenset()
    # upstream function names that stand for custom tools (custom_tool_call items)
    custom_tools: frozenset = frozenset()
    # upstream function name -> client-run tool type (shell, local_shell, apply_patch)
    client_tools: dict = field(default_factory=dict)
    # set `phase` on output messages (commentary before a tool call, else final_answer)
    phase: bool = False
    now: "callable" = time.time
