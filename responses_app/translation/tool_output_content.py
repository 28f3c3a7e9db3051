"""A tool output given as content parts (input_text, input_image, input_file), for the
upstream (pure).

Chat Completions tool messages hold text only. So a tool message gets the output's text
parts; its images, when the route's model takes images, follow the turn's tool messages in
one user message (`The images in the output of tool call <id>:` then the image parts), and
are named in the tool message as `[image N]`. When the route's model takes no images, an
image is written as `[image: <URL>]` (`[image]` for a data URL, `[image: <file_id>]`). A
file part is its text when its `file_data` is base64 (or a data URL) of UTF-8 text,
headed by `[file: <filename>]`, else just that heading (with its URL or file id). Text
parts are joined as they are; an image or a file is on a line of its own.
"""
import base64
import binascii

IMAGES_HEADING = "The images in the output of tool call {call_id}:"


def output_for_upstream(output, images: bool) -> tuple[str, list[dict]]:
    """(the tool message's text, the image parts for the user message after the turn)."""
    if isinstance(output, str):
        return output, []
    text, image_parts, line_added = "", [], False
    for part in output:
        if part["type"] in ("input_text", "output_text"):
            text, line_added = text + part["text"], False
            continue
        if part["type"] == "input_image" and images and part.get("image_url"):
            image_parts.append({"type": "image_url", "image_url": {
                "url": part["image_url"], "detail": _chat_detail(part.get("detail"))}})
            line = f"[image {len(image_parts)}]"
        elif part["type"] == "input_image":
            url = part.get("image_url") or ""
            where = part.get("file_id") or ("" if url.startswith("data:") else url)
            line = f"[image: {where}]" if where else "[image]"
        else:
            line = _file_text(part)
        separator = "\n" if text and not text.endswith("\n") else ""
        text, line_added = f"{text}{separator}{line}\n", True
    return (text[:-1] if line_added else text), image_parts


def images_message(call_id: str, image_parts: list[dict]) -> list[dict]:
    """The user message parts showing one output's images."""
    return [{"type": "text", "text": IMAGES_HEADING.format(call_id=call_id)}, *image_parts]


def show_images(messages: list[dict], pending: list) -> None:
    """The pending tool outputs' images ((call_id, image parts) each), in one user message
    after the turn's tool messages; `pending` is emptied."""
    at = len(messages)
    while at > 0 and messages[at - 1]["role"] != "tool":
        at -= 1
    content = [part for call_id, parts in pending for part in images_message(call_id, parts)]
    messages.insert(at, {"role": "user", "content": content})
    pending.clear()


def _chat_detail(detail) -> str:
    return detail if detail in ("low", "high") else "auto"


def _file_text(part: dict) -> str:
    name = part.get("filename") or part.get("file_url") or part.get("file_id") or "file"
    heading = f"[file: {name}]"
    data = part.get("file_data")
    if not data:
        return heading
    if data.startswith("data:"):
        data = data.split(",", 1)[-1]
    try:
        text = base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return heading
    return f"{heading}\n{text}"
