"""The worker's lean HTTP/1.1 client (responses_app/worker/http_stream.py) against scripted
raw servers on 127.0.0.1: bodies, keep-alive, and each way a connection can fail."""
import asyncio

import pytest

from responses_app.worker.http_stream import (
    ConnectFailed,
    ConnectionLost,
    ConnectTimeout,
    HttpClient,
)

REQUEST_BODY = b'{"model": "m"}'


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


class ScriptedServer:
    """Accepts connections; for each request read, runs `script(reader, writer, number)`."""

    def __init__(self, script):
        self.script = script
        self.connections = 0
        self.requests = []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")][0])
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                if await self.script(reader, writer, len(self.requests)) == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


async def post(client, server, idle_timeout=5.0):
    return await client.post(server.url, REQUEST_BODY, {"content-type": "application/json"},
                             connect_timeout=2.0, idle_timeout=idle_timeout)


async def pieces_before(response, failure, **match) -> list[bytes]:
    """The body pieces read before the read failed with `failure`."""
    received = []
    with pytest.raises(failure, **match):
        async for data in response.batches(0.0):
            received.append(data)
    return received


def test_a_chunked_body_arrives_whole_and_the_connection_is_kept_for_the_next_request():
    pieces = [b"data: %d\n\n" % n for n in range(30)]

    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD)
        for piece in pieces:
            writer.write(chunk(piece))
            await writer.drain()
            await asyncio.sleep(0.002)
        writer.write(LAST_CHUNK)

    async def scenario():
        async with ScriptedServer(script) as server:
            client = HttpClient()
            bodies = []
            for _ in range(2):
                response = await post(client, server)
                assert response.status == 200
                assert response.headers["content-type"] == "text/event-stream"
                received = []
                async for data in response.batches(0.01):
                    received.append(data)
                    response.pace()
                response.release()
                bodies.append(b"".join(received))
            head, body = server.requests[0]
            return bodies, server.connections, head, body

    bodies, connections, head, body = run(scenario())
    assert bodies == [b"".join(pieces)] * 2
    assert connections == 1
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"\r\ncontent-type: application/json\r\n" in head
    assert body == REQUEST_BODY


def test_the_end_arriving_while_the_reader_is_busy_is_not_lost():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(b"first "))
        await writer.drain()
        await asyncio.sleep(0.05)  # the reader has the first piece and is busy with it
        writer.write(chunk(b"second ") + chunk(b"third") + LAST_CHUNK)

    async def scenario():
        async with ScriptedServer(script) as server:
            response = await post(HttpClient(), server)
            received = []
            async for data in response.batches(0.0):
                received.append(data)
                await asyncio.sleep(0.2)  # the rest and the end arrive meanwhile
            return received

    assert b"".join(run(scenario())) == b"first second third"


def test_a_close_delimited_body_ends_with_the_connection():
    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nhello, ")
        await writer.drain()
        writer.write(b"world")
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            response = await post(HttpClient(), server)
            return await response.read()

    assert run(scenario()) == b"hello, world"


def test_an_error_status_comes_with_its_headers_and_body():
    error = b'{"error": {"message": "slow down"}}'

    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(error), error))

    async def scenario():
        async with ScriptedServer(script) as server:
            response = await post(HttpClient(), server)
            return response.status, response.headers["retry-after"], await response.read()

    assert run(scenario()) == (429, "3", error)


def test_a_refused_connection_is_a_connect_failure():
    async def scenario():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await HttpClient().post(f"http://127.0.0.1:{port}/v1/chat/completions", REQUEST_BODY, {},
                                connect_timeout=2.0, idle_timeout=2.0)

    with pytest.raises(ConnectFailed) as raised:
        run(scenario())
    assert not isinstance(raised.value, ConnectTimeout)


def test_a_server_closing_before_it_answers_is_a_connect_failure():
    async def script(reader, writer, number):
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            await post(HttpClient(), server)

    with pytest.raises(ConnectFailed, match="closed the connection before answering"):
        run(scenario())


def test_a_connection_dropped_mid_body_is_lost_after_what_arrived():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await asyncio.sleep(0.05)
        return "close"

    async def scenario():
        async with ScriptedServer(script) as server:
            response = await post(HttpClient(), server)
            return await pieces_before(response, ConnectionLost, match="closed the connection")

    assert run(scenario()) == [b"data: 1\n\n"]


def test_a_silent_server_times_out_while_streaming():
    async def script(reader, writer, number):
        writer.write(CHUNKED_HEAD + chunk(b"data: 1\n\n"))
        await writer.drain()
        await asyncio.sleep(5)

    async def scenario():
        async with ScriptedServer(script) as server:
            response = await post(HttpClient(), server, idle_timeout=0.2)
            return await pieces_before(response, TimeoutError)

    assert run(scenario()) == [b"data: 1\n\n"]


def test_a_pooled_connection_the_server_closed_is_not_reused():
    async def script(reader, writer, number):
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        return "close"  # after answering, although the response said keep-alive

    async def scenario():
        async with ScriptedServer(script) as server:
            client = HttpClient()
            bodies = []
            for _ in range(2):
                response = await post(client, server)
                bodies.append(await response.read())
                response.release()
                await asyncio.sleep(0.05)  # the close reaches the client
            return bodies, server.connections

    assert run(scenario()) == ([b"ok", b"ok"], 2)


def _self_signed_certificate(directory):
    """A certificate for 127.0.0.1 and its key, as PEM files in `directory`."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(
            ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_an_https_upstream_is_verified_and_streamed(tmp_path, monkeypatch):
    import ssl

    from responses_app.worker import http_stream

    cert_path, key_path = _self_signed_certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_path, key_path)

    async def serve(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(CHUNKED_HEAD + chunk(b"data: secure\n\n") + LAST_CHUNK)
        await writer.drain()
        writer.close()

    async def scenario():
        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        try:
            response = await HttpClient().post(
                f"https://127.0.0.1:{port}/v1/chat/completions", REQUEST_BODY, {},
                connect_timeout=5.0, idle_timeout=5.0)
            return await response.read()
        finally:
            server.close()

    # the default trust store does not know this certificate: the connection is refused
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    http_stream._tls_context.cache_clear()
    with pytest.raises(ConnectFailed, match="CERTIFICATE_VERIFY_FAILED"):
        run(scenario())
    # trusted (as an operator would, with SSL_CERT_FILE), it streams
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    http_stream._tls_context.cache_clear()
    try:
        assert run(scenario()) == b"data: secure\n\n"
    finally:
        monkeypatch.delenv("SSL_CERT_FILE")
        http_stream._tls_context.cache_clear()
