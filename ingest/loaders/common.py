"""Helpers shared by the loaders: reading text files safely, whitespace, and table rows as self-contained text."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import BadInputError
from knowledge.types import Section

_WS = re.compile(r"[ \t\r\f\v\u00a0]+")


@dataclass
class LoadedDocument:
    """What a loader returns: the document's sections in reading order, its page count (PDF) and title."""

    sections: list[Section]
    title: str
    pages: int | None = None
    notes: list[str] = field(default_factory=list)


#: Largest text document (Markdown, reST, HTML, plain text) onboarded, in MB (10**6 bytes); split larger files.
MAX_TEXT_FILE_MB = 20
#: Largest PDF onboarded, in MB, and its most pages (a 2,000-page manual of 30-100 MB is within both).
MAX_PDF_FILE_MB = 200
MAX_PDF_PAGES = 5000
#: Longest line in a Markdown, reST or plain-text document (HTML is often minified onto one line).
MAX_LINE_CHARS = 100_000
#: At least this fraction of a document's non-space characters must be letters of words (2-64 letters).
MIN_WORD_FRACTION = 0.03
#: A document that zlib compresses more than this many times is one phrase repeated, not a document.
MAX_COMPRESSION_RATIO = 40.0
_WORD_RUN = re.compile(r"[^\W\d_]+")


def check_file_size(path: Path, kind: str) -> int:
    """The size of `path` in bytes, read with ``stat`` (nothing of the file is read), within the limit of its
    format: `MAX_PDF_FILE_MB` for ``PDF``, `MAX_TEXT_FILE_MB` for the text formats.

    Raises:
        BadInputError: the file is larger than its limit (the message names the file, its size and the limit).
    """
    size = path.stat().st_size
    limit = MAX_PDF_FILE_MB if kind == "PDF" else MAX_TEXT_FILE_MB
    if size > limit * 10**6:
        raise BadInputError(f"{path}: {size / 10**6:.1f} MB is above the {limit} MB limit for "
                            f"{'plain' if kind == 'plain' else kind} {'files' if kind == 'PDF' else 'text documents'}"
                            "; split it into smaller files")
    return size


def check_page_count(path: Path, pages: int) -> None:
    """Refuse a PDF of more than `MAX_PDF_PAGES` pages before its pages are read.

    Raises:
        BadInputError: too many pages.
    """
    if pages > MAX_PDF_PAGES:
        raise BadInputError(f"{path}: {pages:,} pages is above the {MAX_PDF_PAGES:,}-page limit for PDF files; "
                            "split it into smaller files")


def read_text_file(path: Path, kind: str) -> str:
    """Read a UTF-8 (or UTF-16 with BOM, or Latin-1) text file of format `kind` and check that it is a document.

    Raises:
        BadInputError: the file is empty, larger than `MAX_TEXT_FILE_MB`, holds binary data (NUL bytes or control
            characters, e.g. a PDF or image renamed to ``.md``), or is not text-like (`check_text_like`).
    """
    check_file_size(path, kind)
    data = path.read_bytes()
    if not data.strip():
        raise BadInputError(f"{path}: file is empty")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        if b"\x00" in data[:8192]:
            raise BadInputError(f"{path}: binary content, not a {kind} text file")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    sample = text[:8192]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\r\t\f\v")
    if controls > max(2, len(sample) // 100):
        raise BadInputError(f"{path}: binary content, not a {kind} text file")
    if not text.strip():
        raise BadInputError(f"{path}: file is empty")
    check_text_like(text, path, kind)
    return text


def check_text_like(text: str, path: Path, kind: str) -> None:
    """Refuse text that is not a document before anything is chunked, embedded or stored.

    Three generic measures (thresholds are the module constants; real documentation, tables and HTML markup
    included, has 35-95% word characters, lines under ~10,000 characters and compresses 2-10x with zlib):
    words (letter runs of 2-64 letters) must make at least `MIN_WORD_FRACTION` of the non-space characters; no
    line longer than `MAX_LINE_CHARS` (not checked for HTML and JSON); zlib compression ratio at most
    `MAX_COMPRESSION_RATIO`.

    Raises:
        BadInputError: one line naming the file and the measure that failed.
    """
    not_doc = f"{path}: does not look like a {'plain-text' if kind == 'plain' else kind} document"
    nonspace = len(text) - sum(text.count(c) for c in " \t\n\r\f\v\u00a0")
    words = sum(len(run) for run in _WORD_RUN.findall(text) if 2 <= len(run) <= 64)
    if words < MIN_WORD_FRACTION * nonspace:
        raise BadInputError(f"{not_doc}: only {100 * words / max(nonspace, 1):.0f}% of its characters form words "
                            f"(at least {100 * MIN_WORD_FRACTION:.0f}% expected)")
    if kind not in ("HTML", "JSON"):  # markup and minified JSON put a whole document on one line
        longest, number = max((len(line), i) for i, line in enumerate(text.splitlines(), start=1))
        if longest > MAX_LINE_CHARS:
            raise BadInputError(f"{not_doc}: line {number} is {longest:,} characters long "
                                f"(limit {MAX_LINE_CHARS:,})")
    raw = text.encode("utf-8", "replace")
    ratio = len(raw) / len(zlib.compress(raw, 1))
    if ratio > MAX_COMPRESSION_RATIO:
        raise BadInputError(f"{not_doc}: its text repeats itself (compresses {ratio:.0f}x with zlib; "
                            f"documents compress less than {MAX_COMPRESSION_RATIO:.0f}x)")


def clean(text: str) -> str:
    """Collapse runs of spaces/tabs (not newlines) and strip each line."""
    lines = [_WS.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines).strip()


def one_line(text: str) -> str:
    """All whitespace, newlines included, collapsed to single spaces."""
    return " ".join(text.split())


def table_sections(header: Sequence[str], rows: Sequence[Sequence[str]], source: str,
                   heading_path: tuple[str, ...], caption: str = "", page: int | None = None) -> list[Section]:
    """One ``table_row`` section per data row, each carrying its column headers and the table caption.

    A row renders as ``"<caption> | Header A: value a | Header B: value b"``; empty cells are left out and a
    column without a header shows its value alone. Rows whose cells are all empty are dropped. A wide row (longer
    than `WIDE_ROW_CHARS` with more than 4 cells) is also emitted as narrower views, each with the row's first cell
    (its key, e.g. the model name) and a run of consecutive columns, so a question about one column of one row
    matches a short, focused text.
    """
    out: list[Section] = []
    header = [one_line(h) for h in header]
    prefix = f"{one_line(caption)} | " if caption else ""
    for row in rows:
        parts = []
        for i, cell in enumerate(row):
            value = one_line(cell)
            if not value:
                continue
            name = header[i] if i < len(header) else ""
            parts.append(f"{name}: {value}" if name and name != value else value)
        if not parts:
            continue
        texts = [prefix + " | ".join(parts)]
        if len(texts[0]) > WIDE_ROW_CHARS and len(parts) > 4:
            texts += [prefix + " | ".join([parts[0], *group]) for group in _column_groups(parts[1:])]
        out.extend(Section(text=t, source=source, page=page, heading_path=heading_path, kind="table_row",
                           caption=one_line(caption)) for t in texts)
    return out


WIDE_ROW_CHARS = 360


def _column_groups(cells: Sequence[str], max_chars: int = 200) -> list[list[str]]:
    """Consecutive cells packed into groups of at most `max_chars` characters (at least one cell each)."""
    groups: list[list[str]] = [[]]
    size = 0
    for cell in cells:
        if groups[-1] and size + len(cell) > max_chars:
            groups.append([])
            size = 0
        groups[-1].append(cell)
        size += len(cell) + 3
    return groups


def open_heading(levels: list[int], path: list[str], level: int, text: str) -> None:
    """Open a heading of `level` (1 = outermost) titled `text`: close every open heading at that level or deeper
    (`levels[i]` is the level of `path[i]`, both outermost first), then push this one. Both lists change in place."""
    while levels and levels[-1] >= level:
        levels.pop()
        path.pop()
    levels.append(level)
    path.append(text)


def title_from_path(source: str) -> str:
    """Readable words of a file name: ``WormholeB0__TensixTile__L1.md`` -> ``Wormhole B0 Tensix Tile L1``
    (separators become spaces and camelCase words are split)."""
    stem = Path(source).name
    stem = stem[: stem.rfind(".")] if "." in stem else stem
    stem = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", stem)
    return one_line(re.sub(r"[_\-.]+", " ", stem))
