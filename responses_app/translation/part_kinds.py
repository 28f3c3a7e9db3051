"""The kinds of streamed content part: output text and refusal in a message, reasoning text
and reasoning summary in a reasoning item. A `PartKind` names a part's type, its text field,
the list it lives in and the events that open, extend and close it. The translator builds
these events; the recovery of a dead run's stream reads them back."""
from dataclasses import dataclass


@dataclass(frozen=True)
class PartKind:
    """A streamed content part: its part type, its text field and its event names."""

    part_type: str
    text_field: str
    delta_event: str
    done_event: str
    part_added: str = "response.content_part.added"
    part_done: str = "response.content_part.done"
    index_field: str = "content_index"
    item_list: str = "content"


OUTPUT_TEXT = PartKind("output_text", "text", "response.output_text.delta",
                       "response.output_text.done")
REFUSAL = PartKind("refusal", "refusal", "response.refusal.delta", "response.refusal.done")
REASONING_TEXT = PartKind("reasoning_text", "text", "response.reasoning_text.delta",
                          "response.reasoning_text.done")
REASONING_SUMMARY = PartKind("summary_text", "text", "response.reasoning_summary_text.delta",
                             "response.reasoning_summary_text.done",
                             part_added="response.reasoning_summary_part.added",
                             part_done="response.reasoning_summary_part.done",
                             index_field="summary_index", item_list="summary")
