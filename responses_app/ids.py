"""Identifiers for responses and items: a type prefix and 48 random hex digits."""
import os


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(24).hex()}"


def item_id(item: dict, prefix: str) -> str:
    """An input item's own id if it gives one, else a new one with `prefix`."""
    value = item.get("id")
    return value if isinstance(value, str) and value else new_id(prefix)
