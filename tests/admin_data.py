"""Stored responses for the admin tests, shaped as the worker stores them."""
from datetime import timedelta

from django.utils import timezone

from responses_app.ids import new_id
from responses_app.models import TERMINAL_STATUSES, StoredResponse


def user_message(text: str) -> dict:
    return {"id": new_id("msg"), "type": "message", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": text}]}


def assistant_message(text: str) -> dict:
    return {"id": new_id("msg"), "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [],
                         "logprobs": []}]}


def stored(tenant, *, model="model-a", status="completed", input_items=None, output=None,
           created_at=None, previous=None, error=None, background=False, usage=(10, 5),
           instructions=None, response_id=None) -> StoredResponse:
    """One stored response (1.5 s from created to completed when terminal)."""
    response_id = response_id or new_id("resp")
    created_at = created_at or timezone.now()
    input_items = [user_message("hello")] if input_items is None else input_items
    output = [assistant_message("Hi there!")] if output is None else output
    usage_object = None
    if usage:
        usage_object = {"input_tokens": usage[0], "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": usage[1],
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": usage[0] + usage[1]}
    terminal = status in TERMINAL_STATUSES
    return StoredResponse.objects.create(
        id=response_id, tenant=tenant, status=status, model=model, store=True,
        background=background, previous_response_id=previous, created_at=created_at,
        completed_at=created_at + timedelta(milliseconds=1500) if terminal else None,
        error_code=error["code"] if error else None,
        request={"instructions": instructions, "include": [],
                 "params": {"temperature": 0.2, "tools": []}},
        input_items=input_items,
        resource={"id": response_id, "object": "response", "status": status, "model": model,
                  "previous_response_id": previous, "output": output, "usage": usage_object,
                  "error": error, "incomplete_details": None},
        input_tokens=usage[0] if usage else None, output_tokens=usage[1] if usage else None,
    )
