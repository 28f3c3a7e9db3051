"""A file's text, from its bytes and name: PDF (pypdf), HTML (its visible text), and every
kind of UTF-8 text as it is (plain text, Markdown, JSON, source code). Anything else is
refused with the reason, so the file fails alone with a clear `last_error`. Pure: no Django.
"""
import io
import json
from html.parser import HTMLParser

TEXT_ENCODINGS = ("utf-8-sig",)
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
UNSUPPORTED_SUFFIXES = (".doc", ".docx", ".pptx", ".xlsx", ".png", ".jpg", ".jpeg", ".gif",
                        ".zip", ".gz", ".tar")


class Unreadable(Exception):
    """The file's text cannot be read. `code` is OpenAI's last_error code:
    `unsupported_file` (not a kind we read) or `invalid_file` (a kind we read, broken)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def extract_text(data: bytes, filename: str) -> str:
    name = filename.lower()
    if name.endswith(".pdf") or data.startswith(b"%PDF-"):
        text = _pdf_text(data)
    elif name.endswith(UNSUPPORTED_SUFFIXES):
        raise Unreadable("unsupported_file",
                         f"'{filename}': this kind of file is not supported for search "
                         "(text, Markdown, HTML, JSON, source code and PDF are).")
    else:
        text = _decoded(data, filename)
        if name.endswith(HTML_SUFFIXES):
            text = _html_text(text)
        elif name.endswith(".json"):
            try:
                json.loads(text)
            except ValueError as exc:
                raise Unreadable("invalid_file", f"'{filename}' is not valid JSON: {exc}")
    text = text.replace("\x00", "")
    if not text.strip():
        raise Unreadable("invalid_file", f"'{filename}' holds no text to search.")
    return text


def _decoded(data: bytes, filename: str) -> str:
    if b"\x00" in data[:8192]:
        raise Unreadable("unsupported_file",
                         f"'{filename}' is binary, not text (and not a PDF).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable("unsupported_file",
                         f"'{filename}' is not UTF-8 text (byte {exc.start}).")


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise Unreadable("invalid_file", f"The PDF cannot be read: {exc}")
    return "\n\n".join(pages)


class _VisibleText(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "head"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
             "article", "pre", "table", "ul", "ol", "blockquote", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def _html_text(html: str) -> str:
    parser = _VisibleText()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
