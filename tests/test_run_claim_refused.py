"""A run whose claim is refused (our bug: its statement raises, not an outage), logged once,
on the real path in-process: the ASGI application, its embedded worker and the test
database, a trigger refusing the claim; the records are the pytest process's own."""
import json
import logging
import traceback

import psycopg
import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator
from django.db import connection

from gateway.asgi import application
from responses_app.auth import mint_api_key
from responses_app.lifecycle import database
from responses_app.models import Tenant
from responses_app.worker import loop

pytestmark = pytest.mark.django_db(transaction=True)

BARE_500 = {"error": {"message": "The server had an error while processing your request.",
                      "type": "server_error", "param": None, "code": "server_error"}}

REFUSE_CLAIM = """
CREATE FUNCTION refuse_claim() RETURNS trigger AS $$
BEGIN
  IF NEW.status = 'in_progress' THEN RAISE EXCEPTION 'claim refused'; END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER refuse_claim BEFORE INSERT OR UPDATE ON responses
  FOR EACH ROW EXECUTE FUNCTION refuse_claim();
"""


@pytest.fixture
def run_loop_closed():
    """The embedded worker's run loop's database pools closed after the test (their
    sessions would keep the test database from being dropped)."""
    yield
    loop.run(database.close_pool())


@pytest.fixture
def refused(run_loop_closed):
    """Every claim refused (its statement raises), until the test ends."""
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as database:
        database.execute(REFUSE_CLAIM)
        try:
            yield
        finally:
            database.execute("DROP TRIGGER refuse_claim ON responses; "
                             "DROP FUNCTION refuse_claim()")


def post(key: str, body: dict) -> tuple[int, dict]:
    """POST /v1/responses through the ASGI application: (status, JSON body)."""
    data = json.dumps(body).encode()
    communicator = HttpCommunicator(application, "POST", "/v1/responses", body=data, headers=[
        (b"host", b"localhost"), (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"authorization", f"Bearer {key}".encode())])
    raw = async_to_sync(communicator.get_response)(timeout=10)
    return raw["status"], json.loads(raw["body"])


def test_a_refused_claim_is_logged_once_with_its_statement_and_its_error(
        upstream, settings, refused, caplog):
    """A run that carries its job (its claim sent beside its upstream call) whose claim's
    statement raises: its client gets the bare 500, and the refusal is one record (before,
    two: run_claim's warning, then the run's error with a traceback of the claim's await
    only), the error's text in its message, its traceback the statement's."""
    settings.UPSTREAM_BASE_URL = upstream.base_url
    key = mint_api_key(Tenant.objects.create(name="refused"))
    with caplog.at_level(logging.WARNING):
        assert post(key, {"model": "fake-text", "input": "hi"}) == (500, BARE_500)
    [record] = caplog.records
    response_id = record.args[0]
    assert (record.name, record.levelname, record.getMessage()) == (
        "responses_app.worker.run", "ERROR", f"run {response_id}: its claim was refused: "
        "claim refused\nCONTEXT:  PL/pgSQL function refuse_claim() line 3 at RAISE")
    assert response_id.startswith("resp_")
    assert [frame.name for frame in traceback.extract_tb(record.exc_info[2])
            if "site-packages" not in frame.filename] == [
        "_claimed_after_the_run_starts", "claimed_by", "_until", "_attempt", "claim_carried",
        "fetchone"]
