"""A minimal PDF writer for tests: pages of text lines (Helvetica), real PDF syntax that pypdf parses."""

from __future__ import annotations

from pathlib import Path


def _escape(text: str) -> str:
    text = "".join(chr(_LIGATURES[c][0]) if c in _LIGATURES else c for c in text)
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


#: Ligature glyphs of the standard Type 1 fonts, and the byte each is given in a /Differences encoding (as TeX and
#: many PDF producers do): pypdf reads them back as the ligature code points U+FB00..U+FB04.
_LIGATURES = {"\ufb01": (1, "fi"), "\ufb02": (2, "fl"), "\ufb03": (3, "ffi"), "\ufb04": (4, "ffl"),
              "\ufb00": (5, "ff")}


def make_pdf(path: Path, pages: list[list[str]], title: str | None = None) -> Path:
    """Write `pages` (each a list of text lines, top to bottom) as a PDF at `path` and return it. Ligature characters
    (U+FB00..U+FB04) in the lines are drawn with the font's ligature glyphs (/fi, /fl, ... through a /Differences
    encoding), the way typeset PDFs hold them."""
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # placeholder, filled below
    pages_obj = add("")
    if any(c in _LIGATURES for lines in pages for line in lines for c in line):
        differences = " ".join(f"{code} /{name}" for code, name in _LIGATURES.values())
        font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding /BaseEncoding "
                   f"/WinAnsiEncoding /Differences [{differences}] >> >>")
    else:
        font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for lines in pages:
        ops = ["BT", "/F1 10 Tf", "14 TL", "50 780 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [0 0 612 842] "
                        f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>"))
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R >>".encode()
    objects[pages_obj - 1] = (f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] "
                              f"/Count {len(kids)} >>").encode()
    info = add(f"<< /Title ({_escape(title)}) >>") if title else None
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def encrypt_pdf(src: Path, dst: Path, password: str = "secret") -> Path:
    """Copy `src` to `dst` encrypted with a user password (RC4-128: needs no crypto library)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(src))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    with open(dst, "wb") as fh:
        writer.write(fh)
    return dst
