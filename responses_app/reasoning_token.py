"""Reasoning round trips without storage: `encrypted_content` is the reasoning item's text,
sealed with authenticated encryption under a key derived from SECRET_KEY, so only this
deployment can read it back (Codex sends it with `store: false` on every turn)."""
import base64
import hashlib

import orjson
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

_fernets: dict = {}


def _fernet() -> Fernet:
    secret = settings.SECRET_KEY
    fernet = _fernets.get(secret)
    if fernet is None:
        key = hashlib.sha256(b"responses-gateway reasoning v1\x00" + secret.encode()).digest()
        fernet = _fernets[secret] = Fernet(base64.urlsafe_b64encode(key))
    return fernet


def seal(item: dict) -> str:
    """The token for a reasoning item's content and summary."""
    payload = {"content": item.get("content") or [], "summary": item.get("summary") or []}
    return _fernet().encrypt(orjson.dumps(payload)).decode()


def open_sealed(token: str) -> dict | None:
    """The content and summary sealed in `token`; None if it is not ours or was altered."""
    try:
        return orjson.loads(_fernet().decrypt(token.encode()))
    except (InvalidToken, ValueError, TypeError):
        return None
