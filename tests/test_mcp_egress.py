"""The egress guard: refused URLs and resolver answers, each with a clear reason and no
connection made (a listening socket on 127.0.0.1 stands for every address the answers
name, and must never see a connection)."""
import asyncio
import ipaddress
import socket

import pytest

from mcp_tools.client import Limits, McpFailure, ServerTarget, list_tools
from mcp_tools.egress import EgressRefused, parse_allowlist, resolve_checked


def resolver_answering(*addresses):
    async def resolve(host, port):
        return list(addresses)
    return resolve


@pytest.mark.parametrize("url, answers, reason", [
    ("ftp://example.com/mcp", [], "only http and https URLs are allowed"),
    ("http://user:pw@example.com/mcp", [], "credentials in the URL are not allowed; use headers"),
    ("http:///mcp", [], "the URL has no host"),
    ("http://127.0.0.1/mcp", [], "127.0.0.1 is not a globally routable address"),
    ("http://[::1]/mcp", [], "::1 is not a globally routable address"),
    ("http://10.1.2.3/mcp", [], "10.1.2.3 is not a globally routable address"),
    ("http://169.254.169.254/latest", [], "169.254.169.254 is not a globally routable address"),
    ("http://100.64.0.1/mcp", [], "100.64.0.1 is not a globally routable address"),
    ("http://224.0.0.1/mcp", [], "224.0.0.1 is a multicast address"),
    ("http://[::ffff:127.0.0.1]/mcp", [], "::ffff:7f00:1 is an IPv4-mapped IPv6 address"),
    ("http://[64:ff9b::a00:1]/mcp", [],
     "64:ff9b::a00:1 embeds 10.0.0.1, which is not a public address"),
    ("http://internal.example/mcp", ["192.168.1.10"],
     "internal.example resolves to 192.168.1.10, which is not a globally routable address"),
    ("https://rebind.example/mcp", ["93.184.216.34", "127.0.0.1"],
     "rebind.example resolves to 127.0.0.1, which is not a globally routable address"),
    ("https://metadata.example/mcp", ["169.254.169.254"],
     "metadata.example resolves to 169.254.169.254, which is not a globally routable address"),
    ("https://mapped.example/mcp", ["::ffff:10.0.0.1"],
     "mapped.example resolves to ::ffff:a00:1, which is an IPv4-mapped IPv6 address"),
    ("https://nothing.example/mcp", [], "nothing.example could not be resolved"),
])
def test_refused_urls_make_no_connection(url, answers, reason):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        with pytest.raises(EgressRefused) as refused:
            asyncio.run(resolve_checked(url, [], resolver_answering(*answers)))
        assert str(refused.value) == reason
        # the client path refuses the same way, as an http_error, before connecting
        limits = Limits(call_timeout=2, connect_timeout=1, max_tools=10, max_result_bytes=100,
                        resolver=resolver_answering(*answers))
        with pytest.raises(McpFailure) as failure:
            asyncio.run(list_tools(ServerTarget("x", url), limits))
        assert failure.value.error == {"type": "http_error", "code": 403,
                                       "message": f"refused by the egress guard: {reason}"}
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_allowed_answers_pin_the_first_address():
    pinned = asyncio.run(resolve_checked("https://api.example:8443/mcp", [],
                                         resolver_answering("93.184.216.34", "2606:4700::1")))
    assert (pinned.host, pinned.port, pinned.address) == ("api.example", 8443, "93.184.216.34")


def test_the_allowlist_lets_private_ranges_through():
    allowlist = parse_allowlist(["127.0.0.1/32", " 10.0.0.0/8"])
    assert allowlist == [ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8")]
    pinned = asyncio.run(resolve_checked("http://svc.internal/mcp", allowlist,
                                         resolver_answering("10.2.3.4")))
    assert pinned.address == "10.2.3.4"
    with pytest.raises(EgressRefused):
        asyncio.run(resolve_checked("http://127.0.0.2/mcp", allowlist))
