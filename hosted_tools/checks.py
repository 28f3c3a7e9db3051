"""System checks: refuse to start with a web search backend that cannot work, or a drop
list naming no hosted tool type (a typo would turn a drop into a 400, or the reverse)."""
from django.conf import settings
from django.core.checks import Error, register

from .catalog import HOSTED_TYPES
from .web_backends import BACKENDS

# The backends that need a key, and what the key is.
KEYED = {"brave": "the Brave Search API subscription token", "tavily": "the Tavily API key"}


@register()
def web_search_backend_is_usable(app_configs, **kwargs):
    backend = settings.WEB_SEARCH_BACKEND
    if not backend:
        return []
    if backend not in BACKENDS:
        return [Error(f"WEB_SEARCH_BACKEND is {backend!r}: use one of "
                      f"{', '.join(sorted(BACKENDS))}, or leave it empty.",
                      id="hosted_tools.E001")]
    if backend == "searxng" and not settings.WEB_SEARCH_URL:
        return [Error("WEB_SEARCH_BACKEND is 'searxng' but WEB_SEARCH_URL is empty.",
                      hint="Set WEB_SEARCH_URL to the SearXNG instance's base URL.",
                      id="hosted_tools.E002")]
    if backend in KEYED and not settings.WEB_SEARCH_API_KEY:
        return [Error(f"WEB_SEARCH_BACKEND is {backend!r} but WEB_SEARCH_API_KEY is empty.",
                      hint=f"Set WEB_SEARCH_API_KEY to {KEYED[backend]}.",
                      id="hosted_tools.E003")]
    return []


@register()
def drop_list_names_hosted_tools(app_configs, **kwargs):
    unknown = [t for t in settings.HOSTED_TOOLS_DROP_UNAVAILABLE if t not in HOSTED_TYPES]
    if unknown:
        return [Error(f"HOSTED_TOOLS_DROP_UNAVAILABLE names unknown tool types: "
                      f"{', '.join(unknown)}.", hint=f"Known: {', '.join(HOSTED_TYPES)}.",
                      id="hosted_tools.E004")]
    return []
