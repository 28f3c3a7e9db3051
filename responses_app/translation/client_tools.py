"""The client-run tools of OpenAI's 2026 schema (`shell` with a local environment,
`local_shell`, `apply_patch`), which Chat Completions lacks, as function tools and back (pure).

Each tool is offered upstream as a function of its own name (`shell`, `local_shell`,
`apply_patch`) whose parameters are the fields of its call's action:

- `shell`: `{"commands": [command lines], "timeout_ms"?, "max_output_length"?}`;
- `local_shell`: `{"command": [argv], "working_directory"?, "timeout_ms"?, "env"?}`;
- `apply_patch`: `{"type": "create_file" | "update_file" | "delete_file", "path", "diff"?}`.

The model's call of that function becomes the tool's own output item (client_tool_calls).
In the history a `shell_call`, `local_shell_call` or `apply_patch_call` and its `*_output`
go back upstream as that function call and a tool message, the output written as text
(`shell_output_text`, `apply_patch_output_text`; a local shell output is already a string).
"""
import json

from .mcp_history import NAMESPACE_SEPARATOR, upstream_function_name
from .tool_search_items import SERVER_TOOL_SEARCH

SHELL, LOCAL_SHELL, APPLY_PATCH, TOOL_SEARCH = "shell", "local_shell", "apply_patch", "tool_search"
# tool type -> the output item its calls become
CALL_TYPES = {SHELL: "shell_call", LOCAL_SHELL: "local_shell_call",
              APPLY_PATCH: "apply_patch_call", TOOL_SEARCH: "tool_search_call"}
# call item type -> its output item type
OUTPUT_TYPES = {"shell_call": "shell_call_output", "local_shell_call": "local_shell_call_output",
                "apply_patch_call": "apply_patch_call_output",
                "tool_search_call": "tool_search_output"}
# tools a model may be given by the client: in `additional_tools` and `tool_search_output`
LOADABLE_TOOL_TYPES = ("function", "custom", "namespace", SHELL, LOCAL_SHELL, APPLY_PATCH)
OPERATIONS = ("create_file", "update_file", "delete_file")

_STRINGS = {"type": "array", "items": {"type": "string"}}
_FUNCTIONS = {
    SHELL: {
        "description": "Runs shell commands in the user's local environment, in order, and "
                       "returns each one's stdout, stderr and exit code.",
        "parameters": {"type": "object", "properties": {
            "commands": {**_STRINGS, "description": "The command lines to run, in order."},
            "timeout_ms": {"type": "integer", "description": "A time limit for the commands, "
                                                             "in milliseconds."},
            "max_output_length": {"type": "integer", "description": "The most characters "
                                                                    "of output to return."}},
            "required": ["commands"], "additionalProperties": False}},
    LOCAL_SHELL: {
        "description": "Runs one command on the user's machine and returns its output.",
        "parameters": {"type": "object", "properties": {
            "command": {**_STRINGS, "description": "The program and its arguments, e.g. "
                                                   "[\"bash\", \"-lc\", \"ls\"]."},
            "working_directory": {"type": "string"},
            "timeout_ms": {"type": "integer"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["command"], "additionalProperties": False}},
    APPLY_PATCH: {
        "description": "Creates, updates or deletes one file in the user's workspace. For "
                       "create_file, `diff` is the new file's content, every line prefixed "
                       "with '+'. For update_file, `diff` is a V4A diff: hunks introduced by "
                       "'@@' (optionally followed by a line of context), their lines prefixed "
                       "with ' ' (kept), '-' (removed) or '+' (added). delete_file takes no "
                       "diff.",
        "parameters": {"type": "object", "properties": {
            "type": {"type": "string", "enum": list(OPERATIONS)},
            "path": {"type": "string", "description": "The file's path, relative to the "
                                                      "workspace root."},
            "diff": {"type": "string"}},
            "required": ["type", "path"], "additionalProperties": False}},
    TOOL_SEARCH: {
        "description": "Searches for more tools to use; the tools found are available from "
                       "the next turn on.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What the tools should do."}},
            "required": ["query"], "additionalProperties": False}},
}


def client_tool_as_function(tool: dict) -> dict:
    """The Chat Completions function tool standing for a shell, local_shell or apply_patch
    tool (its name is the tool type)."""
    function = {"name": tool["type"], **_FUNCTIONS[tool["type"]]}
    if tool["type"] == TOOL_SEARCH:  # the client's own description and parameters, if any
        for name in ("description", "parameters"):
            if tool.get(name):
                function[name] = tool[name]
    return {"type": "function", "function": function}


def tools_from_items(items: list[dict]) -> list[dict]:
    """The tools the client gave in `additional_tools` and `tool_search_output` items,
    offered (from the request they appear in on) beside the request's own; a function
    marked `defer_loading` (also inside a namespace) counts once loaded this way."""
    found = []
    for item in items:
        if item.get("type") in ("additional_tools", "tool_search_output"):
            found += [_loaded(tool) for tool in item["tools"]]
    return found


def _loaded(tool: dict) -> dict:
    if tool.get("type") == "namespace":
        return {**tool, "defer_loading": False,
                "tools": [{**inner, "defer_loading": False} for inner in tool["tools"]]}
    return {**tool, "defer_loading": False}


def client_tool_names(tools: list[dict]) -> dict:
    """Upstream function name -> the tool type it stands for, for the tools of a request
    (a tool search the gateway runs: SERVER_TOOL_SEARCH)."""
    return {tool["type"]: SERVER_TOOL_SEARCH if tool.get("execution") == "server"
            else tool["type"] for tool in tools if tool["type"] in CALL_TYPES}


# --- history -----------------------------------------------------------------------------------

def client_items_as_function_items(items: list[dict]) -> list[dict]:
    """The items with client tool calls and their outputs as function calls and outputs.
    A server tool search's call and output have no `call_id`: the call is known by its
    item id, and its output answers the server search call before it."""
    if not any(item.get("type") in _AS_FUNCTION for item in items):
        return items
    result, server_call = [], None
    for item in items:
        kind = item.get("type")
        if kind in ("tool_search_call", "tool_search_output") and not item.get("call_id"):
            if kind == "tool_search_call":
                server_call = item.get("id") or "tool_search"
            item = {**item, "call_id": server_call or "tool_search"}
        result.append(_AS_FUNCTION[kind](item) if kind in _AS_FUNCTION else item)
    return result


def _function_call(item: dict, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "id": item.get("id"), "call_id": item["call_id"],
            "name": name, "arguments": json.dumps(arguments, ensure_ascii=False),
            "status": "completed"}


def _function_output(item: dict, text: str) -> dict:
    return {"type": "function_call_output", "id": item.get("id"),
            "call_id": item["call_id"], "output": text, "status": "completed"}


def _shell_call(item):
    action = item["action"]
    arguments = {"commands": action["commands"]}
    for name in ("timeout_ms", "max_output_length"):
        if action.get(name) is not None:
            arguments[name] = action[name]
    return _function_call(item, SHELL, arguments)


def _local_shell_call(item):
    action = item["action"]
    arguments = {"command": action["command"]}
    for name in ("working_directory", "timeout_ms", "env"):
        if action.get(name):
            arguments[name] = action[name]
    return _function_call(item, LOCAL_SHELL, arguments)


def _tool_search_call(item):
    arguments = item["arguments"] if isinstance(item["arguments"], dict) else {
        "query": str(item["arguments"])}
    return _function_call(item, TOOL_SEARCH, arguments)


def tool_search_output_text(tools: list[dict]) -> str:
    """What the model is told of a tool search's output: the names it may call now."""
    names = [name for tool in tools for name in _loaded_names(tool)]
    if not names:
        return "No tools found."
    return "Tools loaded, callable from now on: " + ", ".join(names) + "."


def _loaded_names(tool: dict) -> list[str]:
    """The function names a loaded tool is called by upstream."""
    if tool.get("type") == "namespace":
        return [f"{tool['name']}{NAMESPACE_SEPARATOR}{inner.get('name')}"
                for inner in tool.get("tools") or ()]
    if tool.get("type") == "mcp":
        return [upstream_function_name(tool["server_label"], name)
                for name in tool.get("allowed_tools") or ()]
    return [tool.get("name") or tool["type"]]


def _apply_patch_call(item):
    operation = item["operation"]
    arguments = {"type": operation["type"], "path": operation["path"]}
    if operation.get("diff") is not None:
        arguments["diff"] = operation["diff"]
    return _function_call(item, APPLY_PATCH, arguments)


def shell_output_text(entries: list[dict]) -> str:
    """A shell call's outputs as the model reads them: per command its stdout, its stderr
    under `stderr:`, and `exit code: N` (or `timed out`), commands apart by a blank line."""
    blocks = []
    for entry in entries:
        lines = []
        if entry["stdout"]:
            lines.append(entry["stdout"].rstrip("\n"))
        if entry["stderr"]:
            lines.append("stderr:\n" + entry["stderr"].rstrip("\n"))
        outcome = entry["outcome"]
        lines.append("timed out" if outcome["type"] == "timeout"
                     else f"exit code: {outcome['exit_code']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def apply_patch_output_text(status: str, output: str | None) -> str:
    """`completed` or `failed`, then the client's text after a colon if it sent one."""
    return f"{status}: {output}" if output else status


_AS_FUNCTION = {
    "shell_call": _shell_call,
    "shell_call_output": lambda item: _function_output(item, shell_output_text(item["output"])),
    "local_shell_call": _local_shell_call,
    "local_shell_call_output": lambda item: _function_output(item, item["output"]),
    "apply_patch_call": _apply_patch_call,
    "tool_search_call": _tool_search_call,
    "tool_search_output": lambda item: _function_output(
        item, tool_search_output_text(item["tools"])),
    "apply_patch_call_output": lambda item: _function_output(
        item, apply_patch_output_text(item["status"], item.get("output"))),
}
