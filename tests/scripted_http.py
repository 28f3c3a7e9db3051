"""Scripted raw HTTP/1.1 servers on 127.0.0.1 for the upstream call's tests: each request
read runs a script that writes the answer (or closes, or stays silent), byte for byte."""
import asyncio

import orjson

from upstreams.routing import Route


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse(payload: dict) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


DONE = b"data: [DONE]\n\n"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


async def answer(writer, chunks):
    """A whole streamed answer: each chunk its own HTTP chunk, then [DONE] and the end."""
    writer.write(CHUNKED_HEAD)
    for payload in chunks:
        writer.write(chunk(sse(payload)))
    writer.write(chunk(DONE) + LAST_CHUNK)
    await writer.drain()


class ScriptedServer:
    """Accepts connections; for each request read, runs `script(reader, writer, number)`."""

    def __init__(self, script, ssl=None):
        self.script = script
        self.ssl = ssl
        self.connections = 0
        self.requests = []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl)
        scheme = "https" if self.ssl else "http"
        self.base_url = f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    def route(self, idle_timeout=5.0) -> Route:
        """A route to this server."""
        return Route(name="scripted", base_url=self.base_url, api_key="sk-scripted",
                     connect_timeout=2.0, idle_timeout=idle_timeout)

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


def self_signed_certificate(directory):
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
