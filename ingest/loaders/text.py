"""Plain-text loader: paragraphs split on blank lines; a line underlined with ``===`` or ``---`` is a heading; a
fixed-width table (columns aligned by runs of spaces, as in a readme, optionally under a ``----  ----`` rule) is
read like a PDF's layout-mode table (`ingest.loaders.pdf_tables.layout_tables`): one ``table_row`` section per row
with its column headers, its lines left out of the prose. An ALL-CAPITALS line alone in its block is a heading.
INI-style text (``[section]`` and ``key = value`` lines) is read by `ingest.loaders.ini`; a block of label/value
lines (dot leaders, colons, equals signs, aligned values; indented sub-blocks as scopes) by
`ingest.loaders.label_lines`, one ``- label: value`` item section per line."""

from __future__ import annotations

import re
from pathlib import Path

from ingest.loaders.common import LoadedDocument, one_line, read_text_file, table_sections, title_from_path
from ingest.loaders.ini import ini_sections, looks_like_ini
from ingest.loaders.label_lines import key_value_block
from ingest.loaders.pdf_tables import layout_tables
from knowledge.types import Section

_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")
#: A rule under a fixed-width table's header: runs of dashes or equals signs separated by spaces.
_COLUMN_RULE = re.compile(r"^\s*[-=]{3,}(?:\s+[-=]{3,})+\s*$")
_CAPS_HEADING = re.compile(r"^[A-Z][A-Z0-9 ,&/()\-]{2,60}$")


def load_text(path: Path, source: str) -> LoadedDocument:
    """Load a plain-text file into prose sections.

    Raises:
        BadInputError: empty or binary file.
    """
    text = read_text_file(path, "plain")
    if looks_like_ini(text):  # a configuration file or device descriptor (`ingest.loaders.ini`)
        return LoadedDocument(sections=ini_sections(text, source), title=title_from_path(source))
    sections: list[Section] = []
    heading: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        while len(lines) >= 2 and _UNDERLINE.match(lines[1]) and len(lines[0].strip()) <= 120:
            level = 1 if lines[1].strip()[0] == "=" else 2
            heading = heading[: level - 1] + [one_line(lines[0])]
            lines = lines[2:]
        if len(lines) == 1 and _CAPS_HEADING.match(lines[0].strip()):
            heading = heading[:1] + [lines[0].strip()]  # "SPECIFICATIONS": a section of the document
            continue
        block = key_value_block(lines)  # a tool's or spec sheet's label/value lines (`ingest.loaders.label_lines`)
        if block is not None:
            entries, lines = block
            sections += [Section(text=f"- {e.label}: {e.value}", source=source, heading_path=tuple(heading) + e.scope)
                         for e in entries]
        rows, lines = _fixed_width_tables(lines)
        for header, cells in rows:
            sections += table_sections(header, cells, source, tuple(heading))
        body = one_line(" ".join(lines))
        if body:
            sections.append(Section(text=body, source=source, heading_path=tuple(heading)))
    return LoadedDocument(sections=sections, title=title_from_path(source))


def _fixed_width_tables(lines: list[str]) -> tuple[list[tuple[list[str], list[list[str]]]], list[str]]:
    """The fixed-width tables of one block (header, rows) and the block's other lines (column rules dropped)."""
    kept = [line for line in lines if not _COLUMN_RULE.match(line)]
    if len(kept) == len(lines) and not any(re.search(r"\S\s{3,}\S", line) for line in lines[1:]):
        return [], lines
    tables = layout_tables("\n".join(kept))
    if not tables:
        return [], lines
    used = {" ".join(text.split()) for t in tables for text in t.lines}
    rest = [line for line in kept if " ".join(line.split()) not in used]
    return [(t.header, t.rows) for t in tables], rest
