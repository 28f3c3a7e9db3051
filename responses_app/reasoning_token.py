"""Reasoning round trips without storage: `encrypted_content` is the reasoning item's text,
sealed with authenticated encryption under a key derived from SECRET_KEY, so only this
deployment can read it back (Codex sends it with `store: false` on every turn). Compaction
items (responses_app/context) seal their summary the same way under a key of their own
(`purpose`), so one kind of token is never accepted as the other."""
import base64
import hashlib

import orjson
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

_fernets: dict = {}


def _fernet(purpose: str) -> Fernet:
    secret = settings.SECRET_KEY
    fernet = _fernets.get((secret, purpose))
    if fernet is None:
        label = f"responses-gateway {purpose} v1\x00".encode()
        key = hashlib.sha256(label + secret.encode()).digest()
        fernet = _fernets[(secret, purpose)] = Fernet(base64.urlsafe_b64encode(key))
    return fernet


def seal(item: dict) -> str:
    """The token for a reasoning item's content and summary."""
    payload = {"content": item.get("content") or [], "summary": item.get("summary") or []}
    return seal_payload(payload, "reasoning")


def open_sealed(token: str) -> dict | None:
    """The content and summary sealed in `token`; None if it is not ours or was altered."""
    return open_payload(token, "reasoning")


def unsealed(item: dict) -> dict:
    """A reasoning item sent back with our `encrypted_content` gets its text restored."""
    if item["type"] != "reasoning" or not item.get("encrypted_content") or item["content"]:
        return item
    sealed = open_sealed(item["encrypted_content"])
    return item if sealed is None else {**item, **sealed}


def seal_payload(payload: dict, purpose: str) -> str:
    return _fernet(purpose).encrypt(orjson.dumps(payload)).decode()


def open_payload(token, purpose: str) -> dict | None:
    """The payload sealed in `token` for `purpose`; None if it is not ours or was altered."""
    try:
        payload = orjson.loads(_fernet(purpose).decrypt(token.encode()))
    except (InvalidToken, ValueError, TypeError, AttributeError):
        return None
    return payload if isinstance(payload, dict) else None
