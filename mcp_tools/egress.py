"""The egress guard for request-supplied MCP server URLs.

A URL must be http(s) to globally routable addresses: loopback, private, link-local (the
cloud metadata address 169.254.169.254), carrier-grade NAT, multicast, reserved and
IPv4-mapped IPv6 addresses are refused, and so is a name that resolves to any of them.
The name is resolved once and the connection goes to the checked address (`PinnedTransport`
keeps the Host header and TLS server name), so DNS rebinding cannot slip a second answer in.
MCP_EGRESS_ALLOWLIST lists CIDRs that are let through anyway (tests, private deployments).
"""
import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefused(Exception):
    """The URL may not be reached; the message says why."""


@dataclass(frozen=True)
class PinnedAddress:
    """A URL's host and port, and the one checked address connections go to."""

    host: str
    port: int
    address: str


def parse_allowlist(cidrs) -> list:
    return [ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs if cidr.strip()]


def refusal_reason(address: Address, allowlist: list) -> str | None:
    """Why `address` may not be reached, or None if it may."""
    if any(address in network for network in allowlist):
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return "is an IPv4-mapped IPv6 address"
        embedded = address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and refusal_reason(embedded, []):
            return f"embeds {embedded}, which is not a public address"
    if address.is_multicast:
        return "is a multicast address"
    if not address.is_global:
        return "is not a globally routable address"
    return None


def split_url(url: str) -> tuple[str, int]:
    """The host and port of an http(s) URL; EgressRefused for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise EgressRefused(f"the URL is not valid ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise EgressRefused("only http and https URLs are allowed")
    if not parts.hostname:
        raise EgressRefused("the URL has no host")
    if parts.username or parts.password:
        raise EgressRefused("credentials in the URL are not allowed; use headers")
    return parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def literal_address(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def check_literal_url(url: str, allowlist: list) -> None:
    """What can be refused without resolving a name (used when the request arrives)."""
    host, _ = split_url(url)
    address = literal_address(host)
    if address is not None:
        reason = refusal_reason(address, allowlist)
        if reason:
            raise EgressRefused(f"{address} {reason}")


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [info[4][0] for info in infos]


async def resolve_checked(url: str, allowlist: list, resolver=system_resolver) -> PinnedAddress:
    """Resolve the URL's host once and check every address; the first one is pinned."""
    host, port = split_url(url)
    literal = literal_address(host)
    if literal is not None:
        answers = [str(literal)]
    else:
        try:
            answers = await resolver(host, port)
        except OSError as exc:
            raise EgressRefused(f"{host} could not be resolved ({exc})") from None
        if not answers:
            raise EgressRefused(f"{host} could not be resolved")
    for answer in answers:
        address = ipaddress.ip_address(answer.split("%", 1)[0])
        reason = refusal_reason(address, allowlist)
        if reason:
            name = host if literal is None else "the URL's address"
            raise EgressRefused(f"{name} resolves to {address}, which {reason}"
                                if literal is None else f"{address} {reason}")
    return PinnedAddress(host=host, port=port, address=answers[0].split("%", 1)[0])


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request to the pinned address; refuses any other host or port."""

    def __init__(self, pinned: PinnedAddress, inner: httpx2.AsyncBaseTransport | None = None):
        self.pinned = pinned
        self.inner = inner or httpx2.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        if url.host.lower() != self.pinned.host or port != self.pinned.port:
            raise httpx2.ConnectError(f"refused: {url.host}:{port} is not the checked server",
                                      request=request)
        # The Host header was set from the original URL; TLS checks the name, not the IP.
        request.url = url.copy_with(host=self.pinned.address)
        request.extensions = {**request.extensions, "sni_hostname": self.pinned.host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
