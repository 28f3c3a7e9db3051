"""The API against its own OpenAPI document (/v1/openapi.json), with schemathesis driving a
real Daphne + Celery deployment: generated requests (valid and invalid, a bounded and
deterministic number per operation) never get a 5xx server error, every status and
content type is documented, and every JSON body matches its schema."""
import json
import os

import httpx
import pytest
import schemathesis
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api_schema.operations import DOCUMENTED_VIEWS

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
# Bounded for CI; raise it for a deeper local run (it found the bugs fixed alongside).
EXAMPLES_PER_OPERATION = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "20"))


VALID, INVALID = GenerationMode.POSITIVE, GenerationMode.NEGATIVE


def documented_operations() -> list[tuple[str, str, GenerationMode]]:
    """Every operation of the document (generated here, as the server does), valid requests
    for each and invalid ones where the document constrains something a client sends."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            operations.append((method.upper(), path, VALID))
            queries = [p for p in operation.get("parameters", []) if p["in"] == "query"]
            if "requestBody" in operation or queries:
                operations.append((method.upper(), path, INVALID))
    return operations


OPERATIONS = documented_operations()


@pytest.fixture(scope="module")
def api_schema(production):
    schema = schemathesis.openapi.from_url(f"{production.base_url}/openapi.json")
    # every request carries our key (tests/test_api_errors.py covers the 401s)
    schema.config.generation.update(with_security_parameters=False)
    return schema


@pytest.mark.parametrize("method, path, mode", OPERATIONS,
                         ids=[f"{m} {p} {mode.value}" for m, p, mode in OPERATIONS])
def test_the_api_keeps_to_its_openapi_document(api_schema, production, tenant_key, method, path,
                                               mode):
    operation = api_schema[path][method]
    origin = production.base_url.removesuffix("/v1")

    @given(case=operation.as_strategy(mode))
    @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None,
              deadline=None, suppress_health_check=list(HealthCheck))
    def exchange(case):
        case.call_and_validate(base_url=origin, checks=CHECKS,
                               headers={"Authorization": f"Bearer {tenant_key}"})

    exchange()


def test_responses_created_are_retrieved_listed_and_deleted_as_documented(
        api_schema, production, tenant_key):
    """Stateful: schemathesis follows the document's links from a created response to the
    operations on its id, so their 200 bodies are checked too."""
    origin = production.base_url.removesuffix("/v1")

    class LinkedCalls(api_schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"base_url": origin, "headers": {"Authorization": f"Bearer {tenant_key}"}}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    LinkedCalls.run(settings=settings(
        max_examples=EXAMPLES_PER_OPERATION, stateful_step_count=4, derandomize=True,
        database=None, deadline=None, suppress_health_check=list(HealthCheck)))


def test_the_document_is_public_json_and_lists_the_api(production):
    response = httpx.get(f"{production.base_url}/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document["openapi"] == "3.1.0"
    operations = {(method.upper(), path): operation["operationId"]
                  for path, methods in document["paths"].items()
                  for method, operation in methods.items()}
    assert {(m, p) for m, p, _ in OPERATIONS} == set(operations)
    assert {
        ("POST", "/v1/responses"): "createResponse",
        ("GET", "/v1/responses/{response_id}"): "getResponse",
        ("DELETE", "/v1/responses/{response_id}"): "deleteResponse",
        ("GET", "/v1/responses/{response_id}/input_items"): "listInputItems",
        ("GET", "/v1/models"): "listModels",
    }.items() <= operations.items()
    # every operation is described in api_schema.operations, none guessed by drf-spectacular
    described = {arguments["operation_id"]
                 for methods in DOCUMENTED_VIEWS.values() for arguments in methods.values()}
    assert set(operations.values()) <= described
    create = document["paths"]["/v1/responses"]["post"]
    assert sorted(create["responses"]) == ["200", "400", "401", "404", "413", "429", "500",
                                           "502", "503", "504"]
    assert sorted(create["responses"]["200"]["content"]) == ["application/json",
                                                             "text/event-stream"]
    assert document["components"]["securitySchemes"] == {"ApiKey": {
        "type": "http", "scheme": "bearer",
        "description": "`Authorization: Bearer sk-…` (a key from create_tenant)."}}


def test_the_document_is_generated_without_warnings_and_is_valid_openapi(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                 "--file", str(tmp_path / "openapi.json"))
    assert json.loads((tmp_path / "openapi.json").read_text())["info"]["title"] == (
        "Responses gateway API")
