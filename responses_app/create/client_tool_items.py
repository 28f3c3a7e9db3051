"""The client-run tools of a create body (`shell`, `local_shell`, `apply_patch`; a
`tool_search`, and the tools given mid-conversation: create.tool_search_spec) and their
six input items (`shell_call`, `shell_call_output`, `local_shell_call`,
`local_shell_call_output`, `apply_patch_call`, `apply_patch_call_output`) in their stored
shapes, which are openai-python's output item shapes.

The client runs these tools; the gateway offers them to any Chat Completions model as
functions (translation.client_tools). A `shell` tool whose environment is one of OpenAI's
containers (`container_auto`, `container_reference`) is refused: nothing here runs one.
"""
from .fields import required_string
from ..errors import InvalidRequest
from ..ids import item_id, new_id
from .tool_search_spec import TOOL_SEARCH, TOOL_SEARCH_ITEM_BUILDERS, tool_search_tool

CLIENT_TOOL_TYPES = ("shell", "local_shell", "apply_patch")
OPERATIONS = ("create_file", "update_file", "delete_file")


def client_tool(tool: dict, param: str) -> dict:
    """The tool as stored and echoed; a shell tool's environment must be local (or left
    out, which means local here)."""
    if tool["type"] == TOOL_SEARCH:
        return tool_search_tool(tool, param)
    if tool["type"] != "shell":
        return {"type": tool["type"]}
    environment = tool.get("environment")
    if environment is not None and (not isinstance(environment, dict)
                                    or environment.get("type") != "local"):
        kind = environment.get("type") if isinstance(environment, dict) else environment
        raise InvalidRequest(
            f"Invalid value for '{param}.environment': a shell tool runs on the client here "
            f"(environment {{'type': 'local'}}); {kind!r} names a container this gateway does "
            f"not have.", param=f"{param}.environment", code="unsupported_tool")
    return {"type": "shell", "environment": {"type": "local"}}


def check_client_tool_names(tools: list[dict]) -> None:
    """Each client tool (and tool search) once, and no function, custom or namespaced tool
    bearing its name (the name of the function it is offered as)."""
    kinds = [t["type"] for t in tools if t["type"] in (*CLIENT_TOOL_TYPES, TOOL_SEARCH)]
    names = {t.get("name") for t in tools if t["type"] in ("function", "custom")}
    names |= {inner.get("name") for t in tools if t["type"] == "namespace"
              for inner in t["tools"]}
    for kind in kinds:
        if kinds.count(kind) > 1 or kind in names:
            raise InvalidRequest(f"At most one '{kind}' tool per request, and no function or "
                                 f"custom tool named '{kind}' beside it (it is offered to the "
                                 f"model as a function of that name).", param="tools",
                                 code="invalid_value")


def _status(item, param, allowed, default="completed") -> str:
    status = item.get("status") or default
    if status not in allowed:
        raise InvalidRequest(f"Invalid value for '{param}.status': must be one of "
                             f"{list(allowed)}.", param=f"{param}.status", code="invalid_value")
    return status


def _strings(value, param) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRequest(f"'{param}' must be a list of strings.", param=param,
                             code="invalid_type")
    return list(value)


def _optional_int(obj, name, param) -> int | None:
    value = obj.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise InvalidRequest(f"'{param}.{name}' must be an integer.", param=f"{param}.{name}",
                             code="invalid_type")
    return value


def _object(item, name, param) -> dict:
    value = item.get(name)
    if not isinstance(value, dict):
        raise InvalidRequest(f"Missing or invalid '{param}.{name}': must be an object.",
                             param=f"{param}.{name}", code="invalid_value")
    return value


def _shell_call(item, param) -> dict:
    action = _object(item, "action", param)
    return {"id": item_id(item, "sh"), "type": "shell_call",
            "call_id": required_string(item, "call_id", param),
            "action": {"commands": _strings(action.get("commands"), f"{param}.action.commands"),
                       "timeout_ms": _optional_int(action, "timeout_ms", f"{param}.action"),
                       "max_output_length": _optional_int(action, "max_output_length",
                                                          f"{param}.action")},
            "environment": {"type": "local"},
            "status": _status(item, param, ("in_progress", "completed", "incomplete"))}


def _shell_output_entry(entry, param) -> dict:
    if not isinstance(entry, dict):
        raise InvalidRequest(f"'{param}' must be an object.", param=param, code="invalid_type")
    outcome = entry.get("outcome")
    if isinstance(outcome, dict) and outcome.get("type") == "timeout":
        outcome = {"type": "timeout"}
    elif isinstance(outcome, dict) and outcome.get("type") == "exit" and isinstance(
            outcome.get("exit_code"), int) and not isinstance(outcome["exit_code"], bool):
        outcome = {"type": "exit", "exit_code": outcome["exit_code"]}
    else:
        raise InvalidRequest(f"Invalid value for '{param}.outcome': must be {{'type': 'exit', "
                             f"'exit_code': int}} or {{'type': 'timeout'}}.",
                             param=f"{param}.outcome", code="invalid_value")
    return {"stdout": required_string(entry, "stdout", param),
            "stderr": required_string(entry, "stderr", param), "outcome": outcome}


def _shell_call_output(item, param) -> dict:
    output = item.get("output")
    if not isinstance(output, list):
        raise InvalidRequest(f"'{param}.output' must be a list of {{stdout, stderr, outcome}}.",
                             param=f"{param}.output", code="invalid_type")
    return {"id": item_id(item, "sho"), "type": "shell_call_output",
            "call_id": required_string(item, "call_id", param),
            "output": [_shell_output_entry(e, f"{param}.output[{i}]")
                       for i, e in enumerate(output)],
            "max_output_length": _optional_int(item, "max_output_length", param),
            "status": _status(item, param, ("in_progress", "completed", "incomplete"))}


def _local_shell_call(item, param) -> dict:
    action = _object(item, "action", param)
    env = action.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise InvalidRequest(f"'{param}.action.env' must be an object of strings.",
                             param=f"{param}.action.env", code="invalid_type")
    directory = action.get("working_directory")
    if directory is not None and not isinstance(directory, str):
        raise InvalidRequest(f"'{param}.action.working_directory' must be a string.",
                             param=f"{param}.action.working_directory", code="invalid_type")
    user = action.get("user")
    return {"id": item_id(item, "lsh"), "type": "local_shell_call",
            "call_id": required_string(item, "call_id", param),
            "action": {"type": "exec",
                       "command": _strings(action.get("command"), f"{param}.action.command"),
                       "env": dict(env),
                       "timeout_ms": _optional_int(action, "timeout_ms", f"{param}.action"),
                       "user": user if isinstance(user, str) else None,
                       "working_directory": directory},
            "status": _status(item, param, ("in_progress", "completed", "incomplete"))}


def _local_shell_call_output(item, param) -> dict:
    """OpenAI's schema names the call by `id`; the Agents SDK sends `call_id`: either."""
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidRequest(f"Missing or invalid '{param}.call_id': must be a string.",
                             param=f"{param}.call_id", code="invalid_value")
    return {"id": new_id("lsho"), "type": "local_shell_call_output", "call_id": call_id,
            "output": required_string(item, "output", param),
            "status": _status(item, param, ("in_progress", "completed", "incomplete"))}


def _apply_patch_call(item, param) -> dict:
    operation = _object(item, "operation", param)
    where = f"{param}.operation"
    kind = operation.get("type")
    if kind not in OPERATIONS:
        raise InvalidRequest(f"Invalid value for '{where}.type': must be one of "
                             f"{list(OPERATIONS)}.", param=f"{where}.type", code="invalid_value")
    stored = {"type": kind, "path": required_string(operation, "path", where)}
    if kind != "delete_file":
        stored["diff"] = required_string(operation, "diff", where)
    return {"id": item_id(item, "apc"), "type": "apply_patch_call",
            "call_id": required_string(item, "call_id", param), "operation": stored,
            "status": _status(item, param, ("in_progress", "completed"))}


def _apply_patch_call_output(item, param) -> dict:
    output = item.get("output")
    if output is not None and not isinstance(output, str):
        raise InvalidRequest(f"'{param}.output' must be a string.", param=f"{param}.output",
                             code="invalid_type")
    return {"id": item_id(item, "apco"), "type": "apply_patch_call_output",
            "call_id": required_string(item, "call_id", param),
            "status": _status(item, param, ("completed", "failed"), default=None),
            "output": output}


def _compaction_trigger(item, param) -> dict:
    """Compact the context before answering, as a threshold crossed would (the run's context
    phase: responses_app.worker.run_context); it must be the last input item
    (create_request checks that)."""
    return {"id": item_id(item, "cpt"), "type": "compaction_trigger"}


def compaction_triggered(input_items: list[dict]) -> bool:
    return bool(input_items) and input_items[-1].get("type") == "compaction_trigger"



CLIENT_TOOL_ITEM_BUILDERS = {
    "shell_call": _shell_call,
    "shell_call_output": _shell_call_output,
    "local_shell_call": _local_shell_call,
    "local_shell_call_output": _local_shell_call_output,
    "apply_patch_call": _apply_patch_call,
    "apply_patch_call_output": _apply_patch_call_output,
    **TOOL_SEARCH_ITEM_BUILDERS,
    "compaction_trigger": _compaction_trigger,
}
