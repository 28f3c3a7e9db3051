"""A finished chat completion committed: its row (if `store`) and its usage (always: a chat
completion counts against the tenant's quota as a response does), in one transaction."""
from datetime import datetime, timezone

from django.db import transaction

from accounting.usage import record_response_usage

from ..jobs import ChatJob
from ..models import StoredChatCompletion


def store_completion(job: ChatJob, completion: dict) -> int:
    """Commit the completion and its usage; the tokens it used."""
    with transaction.atomic():
        if job.store:
            StoredChatCompletion.objects.create(
                id=job.id, tenant_id=job.tenant_id, model=job.model,
                created_at=datetime.fromtimestamp(job.created, timezone.utc),
                metadata=job.metadata, request_messages=job.messages,
                completion={**completion, "metadata": job.metadata})
        return record_response_usage(response_id=job.id, tenant_id=job.tenant_id,
                                     api_key_id=job.context.get("api_key_id"), model=job.model,
                                     resource=usage_resource(completion))


def usage_resource(completion: dict) -> dict:
    """The completion's usage in the Responses names accounting.usage reads."""
    usage = completion.get("usage") or {}
    return {"status": "completed", "usage": {
        "input_tokens": usage.get("prompt_tokens") or 0,
        "input_tokens_details": {"cached_tokens": (usage.get("prompt_tokens_details") or {})
                                 .get("cached_tokens") or 0},
        "output_tokens": usage.get("completion_tokens") or 0,
        "output_tokens_details": {"reasoning_tokens": (usage.get("completion_tokens_details")
                                                       or {}).get("reasoning_tokens") or 0}}}
