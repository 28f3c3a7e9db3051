"""Identifiers for responses and items: a type prefix and 48 random hex digits."""
import os


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(24).hex()}"
