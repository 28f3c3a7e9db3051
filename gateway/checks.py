"""System checks that refuse production settings which expose the deployment.

Production is DATABASE_URL set with DEBUG off (what compose and every team deployment run);
there the web process must be told which host names it serves (PUBLIC_URL or
ALLOWED_HOSTS, never `*`) and must have a secret key of its own. `make run` on the embedded
defaults (no DATABASE_URL) needs none of it. These run with every management command
(compose's `migrate` first) and before the web process serves (gateway/serve.py).
"""
from django.conf import settings
from django.core.checks import Error, register

TAG = "deployment"
# settings.SECRET_KEY's default: fine on a laptop, a forgery key in production (it signs
# admin sessions and keys the API key hashes).
DEV_SECRET_KEY_PREFIX = "dev-insecure-change-me-"
HOSTS_HINT = ("Set PUBLIC_URL to the URL clients use (e.g. https://gw.example.com) or "
              "ALLOWED_HOSTS to their host names (comma-separated); the loopback names are "
              "always allowed. See docs/operations.md#behind-a-tls-proxy.")


def production_problems(*, debug: bool, database_url: str, public_url: str,
                        hosts_named: list[str], secret_key: str) -> list[Error]:
    """The errors of these settings (none outside production)."""
    if debug or not database_url:
        return []
    errors = []
    if "*" in hosts_named:
        errors.append(Error("ALLOWED_HOSTS is '*': any Host header is served in production.",
                            hint=HOSTS_HINT, id="gateway.E002"))
    elif not hosts_named and not public_url:
        errors.append(Error("Neither PUBLIC_URL nor ALLOWED_HOSTS is set in production "
                            "(DATABASE_URL set, DEBUG off).", hint=HOSTS_HINT,
                            id="gateway.E001"))
    if secret_key.startswith(DEV_SECRET_KEY_PREFIX):
        errors.append(Error("SECRET_KEY is not set in production: the built-in development key "
                            "would sign admin sessions and key API key hashes.",
                            hint="Set SECRET_KEY to a long random string: python3 -c 'import "
                                 "secrets; print(secrets.token_urlsafe(48))'",
                            id="gateway.E003"))
    return errors


@register(TAG)
def production_settings(app_configs, **kwargs):
    return production_problems(
        debug=settings.DEBUG, database_url=settings.DATABASE_URL,
        public_url=settings.PUBLIC_URL, hosts_named=settings.ALLOWED_HOSTS_NAMED,
        secret_key=settings.SECRET_KEY)
