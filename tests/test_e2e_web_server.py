"""The web process's server (gateway/serve.py's GatewayServer) on the production path:
Twisted no longer parses a POST's form body into `request.args` (which Daphne never reads),
so bodies are the application's alone to judge."""
import httpx


def test_a_malformed_multipart_body_gets_the_apis_error(production, tenant_key):
    """Twisted's form parsing answered this with its bare HTML 400 and closed the
    connection; the application's parser now reads it (no parts: no `purpose`)."""
    response = httpx.post(
        f"{production.base_url}/files", timeout=30,
        headers={"Authorization": f"Bearer {tenant_key}",
                 "Content-Type": "multipart/form-data; boundary=XYZ"},
        content=b"this is not a multipart body")
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": {
        "message": "Missing required parameter: 'purpose'.", "type": "invalid_request_error",
        "param": "purpose", "code": "missing_required_parameter"}}


def test_a_form_encoded_body_reaches_the_application_whole(production, tenant_key):
    """A JSON body sent with a form's content type reaches the view byte for byte."""
    headers = {"Authorization": f"Bearer {tenant_key}"}
    response = httpx.post(
        f"{production.base_url}/responses", timeout=30,
        headers={**headers, "Content-Type": "application/x-www-form-urlencoded"},
        content=b'{"model": "fake-model", "input": "a=b&c=d"}')
    assert response.status_code == 200
    items = httpx.get(f"{production.base_url}/responses/{response.json()['id']}/input_items",
                      headers=headers, timeout=30).json()["data"]
    assert [(item["role"], item["content"]) for item in items] == [
        ("user", [{"type": "input_text", "text": "a=b&c=d"}])]
