"""The output items of the client-run tools while their calls stream (pure): `shell_call`,
`local_shell_call` and `apply_patch_call`, decoded from the arguments of the function the
tool was offered as (client_tools).

- A `shell_call` is added when its call starts (`action.commands` empty). When its arguments
  are complete each command gets `response.shell_call_command.added` (command ""),
  `.delta` (the command) and `.done` (the command), then the item is done. The commands are
  announced once the arguments are whole, not character by character.
- A `local_shell_call` is added when its call starts and done with its action.
- An `apply_patch_call` is added and done together when its arguments are complete, since
  its `operation` (which the schema requires) is not known before: a call the upstream cut
  short is never announced, as a half-written patch cannot be applied.

Arguments that are not the expected JSON are read leniently: a string where a list was
asked is one command (for `local_shell`, `["bash", "-lc", text]`), and arguments that are
not JSON at all are the one command of a shell call. Events are appended without sequence
numbers, as everywhere in the machine.
"""
import json

from .client_tools import APPLY_PATCH, CALL_TYPES, LOCAL_SHELL, OPERATIONS, SHELL, TOOL_SEARCH
from .tool_search_items import SERVER_TOOL_SEARCH

ID_PREFIXES = {SHELL: "sh", LOCAL_SHELL: "lsh", APPLY_PATCH: "apc", TOOL_SEARCH: "tsc"}
COMMAND_ADDED = "response.shell_call_command.added"
COMMAND_DELTA = "response.shell_call_command.delta"
COMMAND_DONE = "response.shell_call_command.done"
CLIENT_TOOL_ITEMS = tuple(CALL_TYPES.values())
# the call items whose output_item.added waits for complete arguments
ADDED_WHEN_DONE = ("apply_patch_call",)


def client_call_item(ids, piece: dict, kind: str) -> dict:
    """The output item, in progress, for the first chunk piece of a client tool's call (or
    of the gateway's tool search: no `call_id`, tool_search_items)."""
    if kind == SERVER_TOOL_SEARCH:
        return {"id": ids("tsc"), "type": "tool_search_call", "call_id": None,
                "execution": "server", "arguments": {}, "status": "in_progress"}
    item = {"id": ids(ID_PREFIXES[kind]), "type": CALL_TYPES[kind],
            "call_id": piece.get("id") or ids("call")}
    if kind == SHELL:
        item["action"] = {"commands": [], "timeout_ms": None, "max_output_length": None}
        item["environment"] = {"type": "local"}
    elif kind == LOCAL_SHELL:
        item["action"] = _exec_action({})
    elif kind == TOOL_SEARCH:
        item.update(execution="client", arguments={})
    item["status"] = "in_progress"
    return item


def close_client_tool_call(events: list, call, status: str) -> None:
    """Fill the item from its complete arguments; its command events and `output_item.done`
    (an `apply_patch_call` is added here, with `call.output_index` set by the caller)."""
    item = call.item
    arguments = "".join(call.pieces)
    item["status"] = status
    if item["type"] == "shell_call":
        item["action"] = _shell_action(arguments, complete=status == "completed")
        for index, command in enumerate(item["action"]["commands"]):
            where = {"output_index": call.output_index, "command_index": index}
            events.append({"type": COMMAND_ADDED, **where, "command": ""})
            events.append({"type": COMMAND_DELTA, **where, "delta": command})
            events.append({"type": COMMAND_DONE, **where, "command": command})
    elif item["type"] == "local_shell_call":
        item["action"] = _exec_action(_object(arguments))
    elif item["type"] == "tool_search_call":
        value = _object(arguments)
        item["arguments"] = value if isinstance(value, dict) else (
            {"query": arguments} if arguments else {})
    else:
        item["operation"] = _operation(arguments)
        events.append({"type": "response.output_item.added", "output_index": call.output_index,
                       "item": {**item, "status": "in_progress"}})
    events.append({"type": "response.output_item.done", "output_index": call.output_index,
                   "item": item})


def _object(arguments: str):
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _integer(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _shell_action(arguments: str, complete: bool) -> dict:
    value = _object(arguments)
    if isinstance(value, dict):
        commands = _strings(value.get("commands", value.get("command")))
    elif isinstance(value, list):
        commands = _strings(value)
    else:  # not JSON: the model wrote the command itself (or was cut short)
        commands = [arguments.strip()] if complete and arguments.strip() else []
    value = value if isinstance(value, dict) else {}
    return {"commands": commands, "timeout_ms": _integer(value.get("timeout_ms")),
            "max_output_length": _integer(value.get("max_output_length"))}


def _exec_action(value) -> dict:
    value = value if isinstance(value, dict) else {}
    command = value.get("command")
    if isinstance(command, str):
        command = ["bash", "-lc", command] if command.strip() else []
    env = value.get("env")
    env = {k: v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {}
    directory = value.get("working_directory")
    return {"type": "exec", "command": _strings(command), "env": env,
            "timeout_ms": _integer(value.get("timeout_ms")), "user": None,
            "working_directory": directory if isinstance(directory, str) else None}


def _operation(arguments: str) -> dict:
    value = _object(arguments)
    value = value if isinstance(value, dict) else {"diff": arguments}
    kind = value.get("type") if value.get("type") in OPERATIONS else "update_file"
    path = value.get("path") if isinstance(value.get("path"), str) else ""
    if kind == "delete_file":
        return {"type": kind, "path": path}
    diff = value.get("diff")
    return {"type": kind, "path": path, "diff": diff if isinstance(diff, str) else ""}
