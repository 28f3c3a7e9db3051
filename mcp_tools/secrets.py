"""Secrets at rest and in flight for MCP: registered servers' credentials and a request's
`headers` on their way to the worker, sealed as JSON with the deployment's encryption keys
(upstreams.secrets: ENCRYPTION_KEYS, rotatable; `manage.py rotate_upstream_keys`
re-encrypts these too)."""
import orjson

from upstreams.secrets import SecretUnreadable, decrypt, encrypt


def seal_json(value) -> str:
    return encrypt(orjson.dumps(value).decode())


def open_json(token: str):
    """The value sealed in `token`; None if no configured key opens it."""
    try:
        return orjson.loads(decrypt(token))
    except (SecretUnreadable, ValueError, TypeError):
        return None
