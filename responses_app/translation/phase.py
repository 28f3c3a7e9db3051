"""Whether a response's output messages carry `phase` (pure).

OpenAI labels an assistant message `commentary` (text the model wrote before calling a tool
in the same response) or `final_answer` (the rest), for the models that were trained to
tell them apart, and clients of those models (Codex) send the label back on every assistant
message. The gateway cannot know which upstream models those are: it labels the output of
the models named by the OUTPUT_PHASE_MODELS setting (shell-style patterns, `*` for all),
and of any request whose history already carries a phase (its client keeps them).

The label is decided when the message closes (the state machine's `phase` option): a
message closed because a tool call opens after it is `commentary`; any other is
`final_answer`. It is on the message in `response.output_item.done`, in the final response
and in the stored item, not in `response.output_item.added` (the message is still open
then, and which one it is depends on what follows it).
"""
from fnmatch import fnmatchcase


def phase_wanted(model: str, patterns: list[str], items: list[dict]) -> bool:
    """Whether the output messages of a response of `model` continuing `items` get a phase."""
    if any(fnmatchcase(model, pattern) for pattern in patterns):
        return True
    return any(item.get("type") == "message" and item.get("phase") for item in items)
