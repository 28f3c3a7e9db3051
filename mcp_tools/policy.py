"""Which MCP tools a request may use and which calls need approval (pure).

`allowed_tools` is a hard limit: a tool outside it is never offered to the model, so it
can never be called. `require_approval` is "always" (the default), "never", or filters
`{"always": {...}, "never": {...}}`; a tool neither filter names needs approval.
"""


def _read_only(tool: dict) -> bool:
    annotations = tool.get("annotations") or {}
    return bool(annotations.get("readOnlyHint") or annotations.get("read_only_hint"))


def _matches(tool: dict, tool_filter: dict) -> bool:
    if not tool_filter:
        return False
    names = tool_filter.get("tool_names")
    if names is not None and tool["name"] not in names:
        return False
    read_only = tool_filter.get("read_only")
    return read_only is None or _read_only(tool) == read_only


def tool_allowed(tool: dict, allowed_tools) -> bool:
    if allowed_tools is None:
        return True
    if isinstance(allowed_tools, list):
        return tool["name"] in allowed_tools
    return _matches(tool, allowed_tools) or allowed_tools == {}


def needs_approval(tool: dict, require_approval) -> bool:
    if require_approval == "never":
        return False
    if require_approval == "always" or require_approval is None:
        return True
    return not _matches(tool, require_approval.get("never") or {})
