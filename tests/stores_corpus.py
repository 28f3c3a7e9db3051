"""A small fixed corpus for the vector store tests: (filename, bytes, attributes), and a
minimal real PDF built by hand (one page, its text in a content stream)."""


def pdf_with_text(text: str) -> bytes:
    """A valid one-page PDF showing `text` (Helvetica), with a correct xref table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return bytes(out)


CORPUS = [
    ("fox.txt", b"The quick brown fox jumps over the lazy dog.",
     {"kind": "animal", "year": 2020}),
    ("foxes.md", b"# Foxes\n\nA fox is a small omnivore. Foxes hunt mice at night.",
     {"kind": "animal", "year": 2023, "draft": True}),
    ("pgvector.html", b"<html><head><title>t</title><style>p {color: red}</style></head>"
     b"<body><p>Postgres stores vectors with pgvector.</p><script>fox()</script></body></html>",
     {"kind": "database", "year": 2024}),
    ("sauce.json", b'{"dish": "brown butter sauce", "note": "cook the butter until brown"}',
     {"kind": "food", "year": 2021}),
    ("search.pdf", pdf_with_text("Hybrid search fuses vector ranks and text ranks"),
     {"kind": "database", "year": 2025}),
]
