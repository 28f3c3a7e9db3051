"""Post-processing of the generated document: the shared component schemas and the links
between operations (neither has a place in drf-spectacular's per-view decorators)."""
from .components import COMPONENTS
from .operations import LINKS


def add_components(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {}).update(COMPONENTS)
    return result


def add_links(result, generator, request, public):
    for (path, method, status), links in LINKS.items():
        response = result["paths"].get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is not None:
            response["links"] = links
    return result
