"""A tool output in a create body: a string, or a list of content parts (`input_text`,
`input_image`, `input_file`), as OpenAI's function, custom tool and MCP outputs may be.

A list is stored and echoed as a list of the parts in their stored shapes (a text part
`{type, text}`, an image `{type, image_url | file_id, detail}`, a file `{type, filename,
file_data | file_url | file_id}`); how the upstream is given them is
translation.tool_output_content's.
"""
from ..errors import InvalidRequest

IMAGE_DETAILS = ("auto", "low", "high", "original")


def tool_output(value, param: str) -> str | list[dict]:
    """The output as stored: the string, or the list of parts (400 naming a bad part)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise InvalidRequest(f"'{param}' must be a string or a list of input_text, "
                             f"input_image and input_file parts.", param=param,
                             code="invalid_type")
    return [_part(part, f"{param}[{i}]") for i, part in enumerate(value)]


def _string(part, name, param) -> str | None:
    value = part.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidRequest(f"'{param}.{name}' must be a string.", param=f"{param}.{name}",
                             code="invalid_type")
    return value


def _part(part, param) -> dict:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text"):
        text = _string(part, "text", param)
        if text is None:
            raise InvalidRequest(f"Missing or invalid '{param}.text': must be a string.",
                                 param=f"{param}.text", code="invalid_value")
        return {"type": "input_text", "text": text}
    if kind == "input_image":
        url, file_id = _string(part, "image_url", param), _string(part, "file_id", param)
        if not url and not file_id:
            raise InvalidRequest(f"'{param}' needs an 'image_url' (a URL or a data URL) or a "
                                 f"'file_id'.", param=f"{param}.image_url", code="invalid_value")
        detail = part.get("detail") or "auto"
        if detail not in IMAGE_DETAILS:
            raise InvalidRequest(f"Invalid value for '{param}.detail': must be one of "
                                 f"{list(IMAGE_DETAILS)}.", param=f"{param}.detail",
                                 code="invalid_value")
        stored = {"type": "input_image", "detail": detail}
        stored.update({"image_url": url} if url else {"file_id": file_id})
        return stored
    if kind == "input_file":
        stored = {"type": "input_file"}
        for name in ("filename", "file_data", "file_url", "file_id"):
            value = _string(part, name, param)
            if value is not None:
                stored[name] = value
        if len(stored) == 1 or stored.keys() == {"type", "filename"}:
            raise InvalidRequest(f"'{param}' needs 'file_data', 'file_url' or 'file_id'.",
                                 param=param, code="invalid_value")
        return stored
    raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r} is not a tool output "
                         f"part type (input_text, input_image, input_file).",
                         param=f"{param}.type", code="invalid_value")
