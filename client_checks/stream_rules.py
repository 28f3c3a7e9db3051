"""The rules every Responses event stream keeps, whatever the model says: it opens with
`response.created`, sequence numbers run 0..n-1, every output item added is done once with
the same id, text deltas add up to their done text, and exactly one terminal event ends it,
carrying the output the items announced. Events are plain dicts (the SDK's events dumped)."""
from collections import defaultdict

TERMINALS = {"response.completed": "completed", "response.incomplete": "incomplete",
             "response.failed": "failed"}
TEXT_DONE = {"response.output_text.done": "response.output_text.delta",
             "response.refusal.done": "response.refusal.delta",
             "response.function_call_arguments.done": "response.function_call_arguments.delta"}
DONE_TEXT_KEY = {"response.output_text.done": "text", "response.refusal.done": "refusal",
                 "response.function_call_arguments.done": "arguments"}


class StreamBroken(AssertionError):
    """A stream broke one of the rules; the message names the event."""


def check_events(events: list[dict]) -> dict:
    """Check one whole stream; return the terminal event's response."""
    if not events:
        raise StreamBroken("the stream had no events")
    if events[0].get("type") != "response.created":
        raise StreamBroken(f"the first event is {events[0].get('type')!r}, not response.created")
    numbers = [event.get("sequence_number") for event in events]
    if numbers != list(range(len(events))):
        raise StreamBroken(f"sequence numbers are not 0..{len(events) - 1}: {numbers}")
    terminals = [event for event in events if event.get("type") in TERMINALS]
    if len(terminals) != 1 or events[-1] is not terminals[0]:
        raise StreamBroken(f"{len(terminals)} terminal events, or one before the end")
    done_items = _check_items(events)
    _check_texts(events)
    response = terminals[0]["response"]
    if response.get("status") != TERMINALS[terminals[0]["type"]]:
        raise StreamBroken(f"{terminals[0]['type']} carries status {response.get('status')!r}")
    if [item.get("id") for item in response.get("output") or []] != done_items:
        raise StreamBroken("the final response's output is not the items the stream finished")
    return response


def _check_items(events: list[dict]) -> list[str]:
    """Every item added is done once, in order; return the finished item ids."""
    opened, done = {}, []
    for event in events:
        if event["type"] == "response.output_item.added":
            opened[event["output_index"]] = event["item"].get("id")
        elif event["type"] == "response.output_item.done":
            item_id = opened.pop(event["output_index"], None)
            if item_id != event["item"].get("id"):
                raise StreamBroken(f"output_item.done #{event['sequence_number']} closes an item "
                                   "that was not added")
            done.append(item_id)
    if opened:
        raise StreamBroken(f"items added but never done: {sorted(opened.values())}")
    return done


def _check_texts(events: list[dict]) -> None:
    """Per item and part, the deltas concatenate to the done event's text."""
    deltas = defaultdict(str)
    for event in events:
        key = (event.get("item_id"), event.get("content_index"))
        if event["type"] in TEXT_DONE.values():
            deltas[event["type"], key] += event.get("delta") or ""
        elif event["type"] in TEXT_DONE:
            streamed = deltas.pop((TEXT_DONE[event["type"]], key), "")
            if streamed != event.get(DONE_TEXT_KEY[event["type"]]):
                raise StreamBroken(f"{event['type']} #{event['sequence_number']}: the deltas "
                                   "do not add up to the done text")
