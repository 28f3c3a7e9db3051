"""Settings of the public address (PUBLIC_URL, hosts, the TLS proxy), from the environment
(docs/configuration.md; the logic in gateway/public_url.py); `gateway.settings` takes them.
"""
import environ

from gateway import public_url

env = environ.Env()

# PUBLIC_URL is the URL clients and the admin use (https://gw.example.com): its host is
# allowed, its origin trusted for the admin's CSRF check, and an https one says a TLS proxy
# sits in front, which turns on what follows (each overridable by its own variable).
# gateway/checks.py refuses production (DATABASE_URL set, DEBUG off) without PUBLIC_URL or
# ALLOWED_HOSTS, with ALLOWED_HOSTS=*, or on the development SECRET_KEY.
PUBLIC_URL = env.str("PUBLIC_URL", default="")
_public = public_url.parse(PUBLIC_URL)
_behind_tls_proxy = _public is not None and _public.https
ALLOWED_HOSTS_NAMED = public_url.listed(env.list("ALLOWED_HOSTS", default=[]))
ALLOWED_HOSTS = public_url.allowed_hosts(ALLOWED_HOSTS_NAMED, _public)
CSRF_TRUSTED_ORIGINS = public_url.csrf_trusted_origins(
    public_url.listed(env.list("CSRF_TRUSTED_ORIGINS", default=[])), _public)
# The header the proxy sets to `https` for a request that came in over HTTPS; empty: none is
# trusted (a client could send it). With one, the proxy's X-Forwarded-Host is trusted too.
_proxy_header = public_url.DEFAULT_PROXY_SSL_HEADER if _behind_tls_proxy else ""
SECURE_PROXY_SSL_HEADER = public_url.proxy_ssl_header(env.str("SECURE_PROXY_SSL_HEADER",
                                                              default=_proxy_header))
USE_X_FORWARDED_HOST = env.bool("USE_X_FORWARDED_HOST", default=SECURE_PROXY_SSL_HEADER is not None)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=_behind_tls_proxy)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_behind_tls_proxy)
SECURE_REDIRECT_EXEMPT = public_url.REDIRECT_EXEMPT
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS",
                              default=public_url.HSTS_SECONDS if _behind_tls_proxy else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS",
                                          default=_behind_tls_proxy)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Preloading is a request to the browsers' lists that the owner of the whole domain makes
# (hstspreload.org), not a default a gateway may make for it: its deploy warning is off.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

__all__ = [name for name in dict(globals()) if name.isupper()]
