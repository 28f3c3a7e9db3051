"""Citations of hosted tool results in an answer's text → `output_text` annotations. Pure.

How a citation is found: the model was given the results numbered [1], [2], ... across the
response and asked to cite by number (translation.hosted_items), so each `[n]` (or
`[n, m]`) naming a result is a citation of it: a web result becomes a `url_citation` whose
`start_index`/`end_index` span the bracket (`text[start:end] == "[1]"`), a file result a
`file_citation` at the bracket's `index`. A web result's URL quoted in the text is a
`url_citation` spanning the URL as well. Numbers no result has are left alone. Annotations
come in the order of their position in the text.
"""
import re

from .hosted_items import FileResult, WebResult

MARKER = re.compile(r"\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]")


def annotations_for(text: str, sources: dict[int, WebResult | FileResult]) -> list[dict]:
    """The annotations of `text` citing `sources` (number -> result)."""
    if not sources or not text:
        return []
    found = []
    for match in MARKER.finditer(text):
        for number in match.group(1).split(","):
            source = sources.get(int(number))
            if source is not None:
                found.append((match.start(), match.end(), _annotation(source, match)))
    for url in dict.fromkeys(s.url for s in sources.values() if isinstance(s, WebResult)):
        source = next(s for s in sources.values() if isinstance(s, WebResult) and s.url == url)
        for match in re.finditer(re.escape(url), text):
            found.append((match.start(), match.end(), _annotation(source, match)))
    found.sort(key=lambda entry: (entry[0], entry[1]))
    return [annotation for _, _, annotation in found]


def _annotation(source, match: re.Match) -> dict:
    if isinstance(source, WebResult):
        return {"type": "url_citation", "start_index": match.start(),
                "end_index": match.end(), "title": source.title, "url": source.url}
    return {"type": "file_citation", "file_id": source.file_id, "filename": source.filename,
            "index": match.start()}
