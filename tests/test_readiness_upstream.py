"""/readyz names the default upstream and whether it accepts a connection: a model server
that listens on loopback only is refused from a container, and this is where it shows."""
import socket

import pytest
from django.test import override_settings

from tests.servers import free_port

pytestmark = pytest.mark.django_db


def test_an_upstream_that_refuses_turns_readiness_red_and_is_named(client):
    port = free_port()  # nothing listens there
    with override_settings(UPSTREAM_BASE_URL=f"http://user:secret@127.0.0.1:{port}/v1?x=1"):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["checks"]["upstream"] == {
        "ok": False, "url": f"http://127.0.0.1:{port}/v1",  # never its credentials
        "detail": "cannot connect: ConnectionRefusedError: [Errno 111] Connection refused"}


def test_an_upstream_that_accepts_is_named_and_fine(client):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with override_settings(UPSTREAM_BASE_URL=url):
            response = client.get("/readyz")
    assert response.json()["checks"]["upstream"] == {"ok": True, "url": url}
