"""Upstream API keys at rest: Fernet tokens under the keys in ENCRYPTION_KEYS.

The first key encrypts, every key decrypts (MultiFernet), so a key is rotated by putting
a new one first, running `manage.py rotate_upstream_keys`, then dropping the old one.
Without ENCRYPTION_KEYS a key derived from SECRET_KEY is used (fine for a laptop; set
ENCRYPTION_KEYS in production so SECRET_KEY can change on its own).
"""
import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(Exception):
    """A stored secret that none of the configured keys opens."""


def encrypt(plaintext: str) -> str:
    return _multi_fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _multi_fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("No key in ENCRYPTION_KEYS opens this secret.") from None


def reencrypt(token: str) -> str:
    """The same secret under the current first key (MultiFernet.rotate)."""
    try:
        return _multi_fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("No key in ENCRYPTION_KEYS opens this secret.") from None


def configured_keys() -> list[str]:
    """The Fernet keys in use, first one encrypting."""
    if settings.ENCRYPTION_KEYS:
        return list(settings.ENCRYPTION_KEYS)
    seed = b"responses-gateway upstream keys v1\x00" + settings.SECRET_KEY.encode()
    return [base64.urlsafe_b64encode(hashlib.sha256(seed).digest()).decode()]


def _multi_fernet() -> MultiFernet:
    return _fernet_for(tuple(configured_keys()))


@lru_cache(maxsize=4)
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])
