"""Text extraction and chunking of vector store files: exact texts and exact chunks."""
import pytest

from tests.stores_corpus import pdf_with_text
from vector_stores.chunking import (InvalidChunkingStrategy, Piece, chunk_text, count_tokens,
                                    strategy_of)
from vector_stores.extraction import Unreadable, extract_text

STATIC = {"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 50}}


def test_it_reads_plain_text_markdown_and_source_as_they_are():
    assert extract_text(b"# Title\n\nSome *text*.", "notes.md") == "# Title\n\nSome *text*."
    assert extract_text(b"def f():\n    return 1\n", "f.py") == "def f():\n    return 1\n"
    assert extract_text("caf\u00e9".encode("utf-8-sig"), "a.txt") == "caf\u00e9"


def test_it_reads_the_visible_text_of_html():
    html = (b"<html><head><title>t</title><style>p {}</style></head><body><h1>Hi</h1>"
            b"<p>one &amp; two</p><script>var x;</script><ul><li>a</li><li>b</li></ul></body>"
            b"</html>")
    assert extract_text(html, "page.html") == "Hi\none & two\na\nb"


def test_it_reads_the_text_of_a_pdf():
    assert extract_text(pdf_with_text("Hello PDF world"), "doc.pdf") == "Hello PDF world"


@pytest.mark.parametrize("data, name, code, message", [
    (b"%PDF-1.4\nnot really a pdf", "broken.pdf", "invalid_file", None),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "image.bin", "unsupported_file",
     "'image.bin' is binary, not text (and not a PDF)."),
    (b"\xff\xfe\xfa", "latin.txt", "unsupported_file", "'latin.txt' is not UTF-8 text (byte 0)."),
    (b"{not json", "data.json", "invalid_file", None),
    (b"   \n", "empty.txt", "invalid_file", "'empty.txt' holds no text to search."),
    (b"PK\x03\x04", "slides.pptx", "unsupported_file", None),
])
def test_it_refuses_what_it_cannot_read_with_the_reason(data, name, code, message):
    with pytest.raises(Unreadable) as caught:
        extract_text(data, name)
    assert caught.value.code == code
    if message is not None:
        assert caught.value.message == message
    else:
        assert caught.value.message.startswith(("The PDF cannot be read: ",
                                                f"'{name}' is not valid JSON: ",
                                                f"'{name}': this kind of file is not supported"))


def test_auto_is_800_tokens_with_400_overlap():
    expected = {"type": "static", "static": {"max_chunk_size_tokens": 800,
                                             "chunk_overlap_tokens": 400}}
    assert strategy_of(None) == expected
    assert strategy_of({"type": "auto"}) == expected


@pytest.mark.parametrize("value, message", [
    ({"type": "magic"}, "'chunking_strategy.type' must be 'auto' or 'static'."),
    ({"type": "static", "static": {"max_chunk_size_tokens": 99, "chunk_overlap_tokens": 0}},
     "'max_chunk_size_tokens' must be an integer from 100 to 4096."),
    ({"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 101}},
     "'chunk_overlap_tokens' must be a non-negative integer at most half of "
     "'max_chunk_size_tokens'."),
    ({"type": "static", "static": {"max_chunk_size_tokens": 200}},
     "'chunking_strategy.static' must be an object with 'max_chunk_size_tokens' and "
     "'chunk_overlap_tokens'."),
])
def test_a_strategy_of_the_wrong_shape_is_refused(value, message):
    with pytest.raises(InvalidChunkingStrategy) as caught:
        strategy_of(value)
    assert str(caught.value) == message


def test_chunks_overlap_by_the_strategy_and_keep_the_original_spans():
    words = [f"w{n}" for n in range(230)]
    text = " ".join(words[:115]) + "\n\n" + " ".join(words[115:])
    pieces = chunk_text(text, STATIC)
    assert [piece.tokens for piece in pieces] == [100, 100, 100, 80]
    assert pieces[0] == Piece(" ".join(words[:100]), 100)
    assert pieces[1].text == " ".join(words[50:115]) + "\n\n" + " ".join(words[115:150])
    assert pieces[3] == Piece(" ".join(words[150:]), 80)
    assert count_tokens("Hello, world!") == 4


def test_a_short_text_is_one_chunk():
    assert chunk_text("just a few words.", STATIC) == [Piece("just a few words.", 5)]
