"""The request side of MCP tools: checks that need the database, before a response is
created: registered servers exist, approvals answer a request of this conversation and
are used once; then the request's headers are kept for the run (never stored)."""
from django.db import IntegrityError

from responses_app.context.compaction_items import carried_in
from responses_app.errors import InvalidRequest
from responses_app.history import chain_items

from . import header_store
from .models import McpApprovalUse, McpServer


def mcp_request_prepare(tenant, create, response_id: str) -> None:
    """Refuse what cannot run (400), claim the approvals, keep the headers for the run."""
    tools = [t for t in create.params.get("tools") or () if t["type"] == "mcp"]
    registered = {t["server_label"] for t in tools if t["server_url"] is None}
    if registered:
        found = set(McpServer.objects.filter(tenant=tenant, label__in=registered)
                    .values_list("label", flat=True))
        for label in sorted(registered - found):
            raise InvalidRequest(f"MCP tool '{label}' has no 'server_url' and no server is "
                                 f"registered under that label.", param="tools",
                                 code="invalid_value")
    approvals = new_approvals(_conversation(tenant, create), create.input_items)
    for approval_id in approvals:
        try:
            McpApprovalUse.objects.create(tenant=tenant, approval_request_id=approval_id,
                                          response_id=response_id)
        except IntegrityError:
            raise InvalidRequest(f"The approval request '{approval_id}' was already answered.",
                                 param="input", code="invalid_value") from None
    if create.mcp_headers:
        header_store.keep(response_id, create.mcp_headers)


def _conversation(tenant, create) -> list[dict]:
    if not any(item["type"] == "mcp_approval_response" for item in create.input_items):
        return []
    if create.history is not None:  # supplied by the front door
        return create.history
    previous = []
    if create.previous_response_id:
        previous = chain_items(tenant.id, create.previous_response_id) or []
    return previous


def new_approvals(previous: list[dict], input_items: list[dict]) -> list[str]:
    """The approval request ids this input answers for the first time (400 for a replay or
    an id this conversation never asked about). Answers followed by their call in the same
    input are history (a client resending the whole conversation), not new answers."""
    answered = {i["approval_request_id"] for i in previous
                if i.get("type") == "mcp_approval_response"}
    answered |= {i["approval_request_id"] for i in previous
                 if i.get("type") == "mcp_call" and i.get("approval_request_id")}
    asked = {i["id"] for i in previous if i.get("type") == "mcp_approval_request"}
    called_later = {i.get("approval_request_id") for i in input_items
                    if i.get("type") == "mcp_call"}
    new = []
    for index, item in enumerate(input_items):
        kind = item["type"]
        if kind == "mcp_approval_request":
            asked.add(item["id"])
        if kind != "mcp_approval_response":
            continue
        request_id = item["approval_request_id"]
        param = f"input[{index}].approval_request_id"
        if request_id not in asked:  # one a compaction carries (sent after it, alone)?
            asked |= {i["id"] for i in carried_in(input_items)
                      if i.get("type") == "mcp_approval_request"}
        if request_id not in asked:
            raise InvalidRequest(f"No MCP approval request '{request_id}' in this conversation.",
                                 param=param, code="invalid_value")
        if request_id in answered:
            raise InvalidRequest(f"The approval request '{request_id}' was already answered.",
                                 param=param, code="invalid_value")
        answered.add(request_id)
        if request_id not in called_later:
            new.append(request_id)
    return new
