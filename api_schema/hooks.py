"""Post-processing of the generated document: the shared component schemas."""
from .components import COMPONENTS


def add_components(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {}).update(COMPONENTS)
    return result
