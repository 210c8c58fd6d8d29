"""Helpers shared by the loaders: reading text files safely, whitespace, and table rows as self-contained text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ingest.types import Section
from knowledge.errors import BadInputError

_WS = re.compile(r"[ \t\r\f\v\u00a0]+")


@dataclass
class LoadedDocument:
    """What a loader returns: the document's sections in reading order, its page count (PDF) and title."""

    sections: list[Section]
    title: str
    pages: int | None = None
    notes: list[str] = field(default_factory=list)


def read_text_file(path: Path, kind: str) -> str:
    """Read a UTF-8 (or UTF-16 with BOM, or Latin-1) text file of format `kind`.

    Raises:
        BadInputError: the file is empty, or holds binary data (NUL bytes or control characters), e.g. a PDF or
            image renamed to ``.md``.
    """
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
    return text


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
        out.extend(Section(text=t, source=source, page=page, heading_path=heading_path, kind="table_row")
                   for t in texts)
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


def title_from_path(source: str) -> str:
    """Readable words of a file name: ``WormholeB0__TensixTile__L1.md`` -> ``Wormhole B0 Tensix Tile L1``
    (separators become spaces and camelCase words are split)."""
    stem = Path(source).name
    stem = stem[: stem.rfind(".")] if "." in stem else stem
    stem = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", stem)
    return one_line(re.sub(r"[_\-.]+", " ", stem))
