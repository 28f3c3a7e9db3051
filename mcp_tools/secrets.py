"""Secrets at rest and in flight for MCP: registered servers' credentials and a request's
`headers` on their way to the worker, sealed with MultiFernet.

Keys come from MCP_SECRET_KEYS (newest first, so keys rotate: old tokens still open), or
one derived from SECRET_KEY when none is set.
"""
import base64
import hashlib

import orjson
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

_cache: dict = {}


def _fernet() -> MultiFernet:
    keys = tuple(settings.MCP_SECRET_KEYS) or (_derived_key(settings.SECRET_KEY),)
    fernet = _cache.get(keys)
    if fernet is None:
        fernet = _cache[keys] = MultiFernet([Fernet(key) for key in keys])
    return fernet


def _derived_key(secret: str) -> bytes:
    digest = hashlib.sha256(b"responses-gateway mcp secrets v1\x00" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest)


def seal_json(value) -> str:
    return _fernet().encrypt(orjson.dumps(value)).decode()


def open_json(token: str):
    """The value sealed in `token`; None if no current key opens it."""
    try:
        return orjson.loads(_fernet().decrypt(token.encode()))
    except (InvalidToken, ValueError, TypeError):
        return None
