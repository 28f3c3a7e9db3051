"""A tiny OTLP/HTTP trace receiver on 127.0.0.1 for tests: what a deployment's exporter
(OTEL_EXPORTER_OTLP_ENDPOINT pointed here) sends, decoded with the protocol's own protobuf
messages (opentelemetry-proto) into plain span dicts."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def spans_of(request: ExportTraceServiceRequest) -> list[dict]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "service": resource.get("service.name"), "name": span.name,
                    "kind": KINDS.get(span.kind), "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(), "parent_id": span.parent_span_id.hex(),
                    "scope": scope_spans.scope.name, "status": span.status.code,
                    "attributes": {a.key: _value(a.value) for a in span.attributes},
                    "links": [(link.trace_id.hex(), link.span_id.hex())
                              for link in span.links]})
    return spans


class OtlpReceiver:
    """Serves POST /v1/traces; `spans` is everything received, in arrival order."""

    def __init__(self):
        self.spans: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/traces":
                    receiver.spans += spans_of(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
