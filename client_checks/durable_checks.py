"""Checks of stored, long-lived state: background mode polled to its end, cancel, resuming a
stream with `starting_after`, and a conversation across two turns. Same contract as
basic_checks: raise on a failure, return a short detail."""
from openai import BadRequestError

from client_checks.probes import (CheckFailed, dump, expect, expect_completed,
                                  wait_until_finished)
from client_checks.stream_rules import check_events

WAIT_SECONDS = 120.0
LONG_PROMPT = "Count from 1 to 300, one number per line."


def check_background(client, model: str) -> str:
    """`background: true` answers at once (queued or in progress), then completes."""
    created = client.responses.create(model=model, input="Say hello.", background=True)
    expect(created.background is True, "the created response does not say background: true")
    expect(created.status in ("queued", "in_progress", "completed"),
           f"a new background response is {created.status!r}")
    final = wait_until_finished(client, created.id, WAIT_SECONDS)
    expect_completed(final, "the background response")
    return f"{created.status} -> {final.status}"


def check_cancel(client, model: str) -> str:
    """`cancel` stops a background response (or returns it as it is when it has finished);
    cancelling again returns the same; a foreground response cannot be cancelled."""
    created = client.responses.create(model=model, input=LONG_PROMPT, background=True)
    cancelled = client.responses.cancel(created.id)
    expect(cancelled.status in ("cancelled", "completed"),
           f"the cancelled response is {cancelled.status!r}")
    settled = wait_until_finished(client, created.id, WAIT_SECONDS)
    expect(settled.status == cancelled.status,
           f"cancel answered {cancelled.status!r} but the response became {settled.status!r}")
    expect(client.responses.cancel(created.id).status == settled.status,
           "a second cancel changed the response")
    foreground = client.responses.create(model=model, input="Say hi.")
    try:
        client.responses.cancel(foreground.id)
    except BadRequestError:
        pass
    else:
        raise CheckFailed("cancelling a foreground response was accepted")
    if cancelled.status == "completed":
        return "finished before the cancel reached it"
    return "cancelled"


def check_resume(client, model: str) -> str:
    """A background stream read whole, then resumed after event k: the same events from k+1."""
    with client.responses.create(model=model, input="Say hello in one short sentence.",
                                 background=True, stream=True) as stream:
        events = [dump(event) for event in stream]
    final = check_events(events)
    expect(final["status"] == "completed", f"the streamed response ended {final['status']!r}")
    after = len(events) // 2
    with client.responses.retrieve(final["id"], stream=True, starting_after=after) as resumed:
        tail = [dump(event) for event in resumed]
    expect(tail == events[after + 1:],
           f"resuming after {after} gave {len(tail)} events, not the {len(events) - after - 1} "
           "that followed it")
    return f"resumed after event {after} of {len(events)}"


def check_conversations(client, model: str) -> str:
    """Two turns in a conversation: its items hold both turns in order; then it is deleted."""
    conversation = client.conversations.create(metadata={"purpose": "check_clients"})
    try:
        for prompt in ("My name is Ada. Say OK.", "What is my name?"):
            expect_completed(client.responses.create(model=model, input=prompt,
                                                     conversation=conversation.id),
                             "a response in the conversation")
        items = client.conversations.items.list(conversation.id, order="asc").data
        roles = [item.role for item in items if item.type == "message"]
        expect(roles == ["user", "assistant", "user", "assistant"],
               f"the conversation's messages are {roles}")
    finally:
        deleted = client.conversations.delete(conversation.id)
    expect(deleted.deleted, "the conversation was not deleted")
    return f"{len(items)} items"
