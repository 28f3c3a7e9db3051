"""The deployment's public address: what `PUBLIC_URL` (the URL clients and the admin use,
usually a TLS proxy's) implies for Django's host, CSRF and HTTPS settings.

Every real deployment sits behind TLS termination: the proxy speaks HTTPS to clients and
plain HTTP to the web process, so Django must be told the public origin (for the admin's
CSRF Origin check), which header says a request came in over HTTPS, and that its cookies
are HTTPS-only. `gateway/settings.py` derives those settings here, each overridable by its
own variable; `gateway/checks.py` refuses production settings that expose the deployment.
"""
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# Always allowed: health checks from inside the host or container (compose's) use them, and
# a Host naming the loopback gives an attacker nothing (DNS rebinding sends the attacker's
# own name).
LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
# Trusted when the deployment says it sits behind a proxy: the proxy must set it (and
# overwrite a client's), as nginx, Caddy and Traefik do when configured as documented.
DEFAULT_PROXY_SSL_HEADER = "X-Forwarded-Proto"
# Not redirected to HTTPS: health checks and scrapes come over the private network in
# plain HTTP, and the API answers where it is asked (a redirected POST loses its body; a
# key sent in clear is exposed already). The admin is redirected.
REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$", r"^v1/"]
HSTS_SECONDS = 365 * 24 * 3600


@dataclass(frozen=True)
class PublicURL:
    scheme: str
    host: str  # as in a Host header: a name, an IPv4 address or a bracketed IPv6 one
    origin: str  # scheme://host[:port], as browsers send it in Origin

    @property
    def https(self) -> bool:
        return self.scheme == "https"


def parse(value: str) -> PublicURL | None:
    """`PUBLIC_URL` → its parts; None when empty. Anything but scheme://host[:port]/ refuses."""
    if not value:
        return None
    parts = urlsplit(value)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (parts.scheme not in ("http", "https") or not parts.hostname or port == -1
            or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username):
        raise ImproperlyConfigured(
            f"PUBLIC_URL must be scheme://host[:port] (e.g. https://gw.example.com), with no "
            f"path, query or credentials: got {value!r}.")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default_port = {"http": 80, "https": 443}[parts.scheme]
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default_port) else "")
    return PublicURL(parts.scheme, host, origin)


def listed(values: list[str]) -> list[str]:
    """A comma-separated variable's items without the spaces around them, empty ones dropped."""
    return [value.strip() for value in values if value.strip()]


def allowed_hosts(named: list[str], public: PublicURL | None) -> list[str]:
    """The hosts named in ALLOWED_HOSTS, the public URL's, and the loopback names, once each."""
    hosts = [*named, *([public.host] if public else []), *LOOPBACK_HOSTS]
    return list(dict.fromkeys(hosts))


def csrf_trusted_origins(named: list[str], public: PublicURL | None) -> list[str]:
    return list(dict.fromkeys([*named, *([public.origin] if public else [])]))


def proxy_ssl_header(header: str) -> tuple[str, str] | None:
    """A header name (`X-Forwarded-Proto`) → Django's SECURE_PROXY_SSL_HEADER; '' → None."""
    if not header:
        return None
    return "HTTP_" + header.upper().replace("-", "_"), "https"
