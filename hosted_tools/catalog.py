"""Every tool type of OpenAI's Responses schema (openai-python `types/responses/tool_param.py`)
that the model cannot be offered as a client function, and what becomes of it here.

`web_search` (and its dated and preview variants) and `file_search` run when a backend is
configured (a search backend serving the tenant: hosted_tools.backend_table, checked once
the tenant is known by hosted_tools.tenant_tools; the vector stores app). The other types
name tools OpenAI runs in its own sandboxes or that need a special client (computer use): no
backend here runs them. (`shell`, `local_shell`, `apply_patch` and `tool_search` are not
here: the client runs the first three, the client or the gateway a tool search
(hosted_tools.tool_search), and any model is offered them as functions:
responses_app.client_tool_items.) A tool the deployment cannot run is refused with a 400
naming it and the setting that changes that, or, for the types in
HOSTED_TOOLS_DROP_UNAVAILABLE (default: the web search types, which Codex sends on every
request), dropped: not offered, not echoed, named in the `X-Gateway-Dropped-Tools` response
header and counted in the `gateway_hosted_tools_dropped{type}` metric. Pure but for reading
settings.
"""
import functools
import importlib.util

from django.conf import settings

WEB_SEARCH_TYPES = ("web_search", "web_search_2025_08_26", "web_search_preview",
                    "web_search_preview_2025_03_11")
FILE_SEARCH_TYPES = ("file_search",)
# Types with no backend in this gateway, and what would run them at OpenAI.
UNBACKED_TYPES = {
    "code_interpreter": "a code sandbox",
    "image_generation": "an image model",
    "computer_use_preview": "a computer-use model and a client driving a screen",
    "computer": "a computer-use model and a client driving a screen",
    "programmatic_tool_calling": "a code sandbox calling tools",
}
HOSTED_TYPES = (*WEB_SEARCH_TYPES, *FILE_SEARCH_TYPES, *UNBACKED_TYPES)
DROPPED_HEADER = "X-Gateway-Dropped-Tools"
DEFAULT_DROP = ",".join(WEB_SEARCH_TYPES)


NO_SEARCH_BACKEND = ("no search backend serves this tenant (set WEB_SEARCH_BACKEND, or add a "
                     "web search backend in the admin)")


def file_search_available() -> bool:
    """The vector stores app (its search service) is part of this deployment."""
    return settings.FILE_SEARCH_ENABLED and _vector_stores_installed()


@functools.cache
def _vector_stores_installed() -> bool:
    return importlib.util.find_spec("vector_stores") is not None


def unavailable_reason(tool: dict) -> str | None:
    """Why this hosted tool cannot run here (None: it runs, for web search if a backend
    serves the tenant: NO_SEARCH_BACKEND otherwise), naming what would enable it."""
    kind = tool["type"]
    if kind in WEB_SEARCH_TYPES:
        if tool.get("external_web_access") is False:
            return ("it asks for offline (cache-only) search, and this gateway keeps no "
                    "search cache")
        return None
    if kind in FILE_SEARCH_TYPES:
        if not file_search_available():
            return "vector stores are not enabled on this deployment (FILE_SEARCH_ENABLED)"
        return None
    return f"this gateway has no backend for it (it needs {UNBACKED_TYPES[kind]})"


def dropped_when_unavailable(kind: str) -> bool:
    return kind in settings.HOSTED_TOOLS_DROP_UNAVAILABLE
