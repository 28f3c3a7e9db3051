"""Post-processing of the generated document: the shared component schemas and the links
between operations (neither has a place in drf-spectacular's per-view decorators)."""
from .components import COMPONENTS
from .operations import LINKS


def add_components(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {}).update(COMPONENTS)
    return result


def add_links(result, generator, request, public):
    """The links of LINKS whose two ends are both in this document."""
    operation_ids = {operation.get("operationId") for operations in result["paths"].values()
                     for operation in operations.values()}
    for (path, method, status), links in LINKS.items():
        response = result["paths"].get(path, {}).get(method, {}).get("responses", {}).get(status)
        present = {name: link for name, link in links.items()
                   if link["operationId"] in operation_ids}
        if response is not None and present:
            response["links"] = present
    return result
