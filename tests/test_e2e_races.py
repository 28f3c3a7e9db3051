"""Two requests on one response at once, on the shared production deployment: the race is
made deterministic with a held upstream model (`bench-…-held…`: the run waits, mid-answer,
until the test releases it), so the second request lands while the first is running."""
import json
import threading
import time

import httpx

from tests.oracles import check_sse_stream

HANG_GUARD_SECONDS = 30  # a stream that has not ended by then hangs (keep-alives only)
COMPLETED_TEXT = [
    "response.created", "response.in_progress", "response.output_item.added",
    "response.content_part.added", *["response.output_text.delta"] * 3,
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.completed"]


def _events(lines) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in lines
            if line.startswith("data: ") and line != "data: [DONE]"]


class StreamReader(threading.Thread):
    """Reads one SSE stream to its end on a thread; `first_delta` is set at its first
    output_text delta."""

    def __init__(self, client: httpx.Client, method: str, path: str, **kwargs):
        super().__init__(daemon=True)
        self.client, self.method, self.path, self.kwargs = client, method, path, kwargs
        self.first_delta = threading.Event()
        self.lines: list[str] = []
        self.status = None

    def run(self):
        with self.client.stream(self.method, self.path, **self.kwargs) as reply:
            self.status = reply.status_code
            for line in reply.iter_lines():
                self.lines.append(line)
                if line.startswith("data: ") and "response.output_text.delta" in line:
                    self.first_delta.set()

    def checked(self) -> tuple[list[dict], dict]:
        """Its events and final response once the stream ended (fails if it did not: a
        hang), through the shared stream checks."""
        self.join(HANG_GUARD_SECONDS)
        assert not self.is_alive(), f"the stream did not end: {self.lines[-6:]}"
        return check_sse_stream("\n".join(self.lines).encode() + b"\n")


def test_deleting_a_running_response_ends_its_streams(production, tenant_key, upstream):
    """DELETE while the run streams: the DELETE wins (the response is gone, nothing is
    stored), and the creator's stream and a resumed one still end, with what the run made."""
    model = f"bench-3-0-held1-deleted{time.time_ns()}"
    with production.client(tenant_key) as api:
        creator = StreamReader(api, "POST", "/responses", json={
            "model": model, "input": "hi", "background": True, "stream": True})
        creator.start()
        assert creator.first_delta.wait(HANG_GUARD_SECONDS)
        response_id = _events(creator.lines)[0]["response"]["id"]
        resumed = StreamReader(api, "GET", f"/responses/{response_id}",
                               params={"stream": "true"})
        resumed.start()
        assert resumed.first_delta.wait(HANG_GUARD_SECONDS)

        deleted = api.delete(f"/responses/{response_id}")
        assert (deleted.status_code, deleted.json()) == (200, {
            "id": response_id, "object": "response", "deleted": True})
        upstream.release(model)

        streams = [reader.checked() for reader in (creator, resumed)]
        assert (creator.status, resumed.status) == (200, 200)
        (events, final), (replayed, _) = streams
        assert replayed == events  # the resume from the start: the same events
        assert [event["type"] for event in events] == COMPLETED_TEXT
        assert (final["status"], final["output"][0]["content"][0]["text"]) == (
            "completed", "w0 w1 w2 ")
        gone = api.get(f"/responses/{response_id}")
        assert (gone.status_code, gone.json()) == (404, {"error": {
            "message": f"No response found with id '{response_id}'.",
            "type": "invalid_request_error", "param": None, "code": "not_found"}})
