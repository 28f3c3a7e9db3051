"""Filling a prompt template's variables (pure).

A template's `instructions` and `messages` name variables as `{{name}}` (letters, digits,
`_`, `-`, `.`; spaces inside the braces allowed). A variable's value is a string or an
`input_text` part (its text replaces the placeholder wherever it stands), or an
`input_image` / `input_file` part, which replaces a message's text part (or string
content) that is that placeholder alone (a file as its text, as for tool outputs:
responses_app.translation.tool_output_content); anywhere else (the instructions, or inside other
text) an image or file is refused. Every variable the template names must be given, and
only those: either mistake is a `PromptError` naming the variable.
"""
import re

from responses_app.translation.tool_output_content import output_for_upstream

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")
MESSAGE_ROLES = ("user", "assistant", "system", "developer")


class PromptError(ValueError):
    def __init__(self, message: str, param: str = "prompt.variables"):
        super().__init__(message)
        self.param = param


def check_template(instructions: str, messages) -> None:
    """ValueError when the messages are not a list of {role, content} messages."""
    if not isinstance(messages, list):
        raise ValueError("Messages must be a list of {role, content} messages.")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in MESSAGE_ROLES:
            raise ValueError(f"Message {index} must be an object with a role among "
                             f"{', '.join(MESSAGE_ROLES)}.")
        content = message.get("content")
        if not isinstance(content, str) and not (isinstance(content, list) and all(
                isinstance(p, dict) for p in content)):
            raise ValueError(f"Message {index}: content must be a string or a list of parts.")


def variables_of(instructions: str, messages: list[dict]) -> list[str]:
    """The variables a template names, in order of first use."""
    names = PLACEHOLDER.findall(instructions or "")
    for message in messages:
        content = message["content"]
        for text in [content] if isinstance(content, str) else [
                p.get("text") or "" for p in content]:
            names += PLACEHOLDER.findall(text)
    return list(dict.fromkeys(names))


def render(instructions: str, messages: list[dict], variables: dict,
           where: str) -> tuple[str, list[dict]]:
    """The instructions and messages with their variables filled (`where` names the
    template version in errors)."""
    wanted = variables_of(instructions, messages)
    for name in wanted:
        if name not in variables:
            raise PromptError(f"Missing value for prompt variable '{name}' ({where} uses "
                              f"{', '.join(wanted)}).")
    for name in variables:
        if name not in wanted:
            raise PromptError(f"Unknown prompt variable '{name}': {where} uses "
                              f"{', '.join(wanted) or 'no variables'}.")
    filled = [{**m, "content": _content(m["content"], variables)} for m in messages]
    return _text(instructions or "", variables), filled


def _text(text: str, variables: dict) -> str:
    def value(match):
        part = variables[match[1]]
        if isinstance(part, str):
            return part
        if part["type"] == "input_text":
            return part["text"]
        raise PromptError(f"Prompt variable '{match[1]}' is an {part['type']}: it can only "
                          f"fill a message part that is '{{{{{match[1]}}}}}' alone.")
    return PLACEHOLDER.sub(value, text)


def _content(content, variables):
    if isinstance(content, str):
        alone = _alone(content, variables)
        return [alone] if alone is not None else _text(content, variables)
    parts = []
    for part in content:
        alone = _alone(part.get("text"), variables) if "text" in part else None
        if alone is not None:
            parts.append(alone)
        elif "text" in part and isinstance(part["text"], str):
            parts.append({**part, "text": _text(part["text"], variables)})
        else:
            parts.append(part)
    return parts


def _alone(text, variables) -> dict | None:
    """The image or file part a text that is one placeholder alone stands for."""
    match = PLACEHOLDER.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    value = variables.get(match[1])
    if not isinstance(value, dict) or value["type"] == "input_text":
        return None
    if value["type"] == "input_file":  # a message takes no file part: its text goes in
        return {"type": "input_text", "text": output_for_upstream([value], False)[0]}
    return value
