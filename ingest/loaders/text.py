"""Plain-text loader: paragraphs split on blank lines, a heading hierarchy, label/value lines and fixed-width tables.

- Headings: a line underlined with ``===`` (level 1) or ``---`` (level 2); a numbered heading alone in its block
  (``4.2.2.1 Per vector slice``: its level is the depth of its number, so it nests under ``4.2.2``); an
  ALL-CAPITALS line alone in its block (level 2). A numbered, underlined heading takes its number's depth. Each
  section's heading path is the chain of open headings, so a scope heading (``4.2.1 Per chip``) scopes the lines
  under it (`ingest.profile_scope.scope_heading`).
- Label/value lines: a block of at least `MIN_LABEL_LINES` ``Label: value`` lines, at least half its lines (a
  manual's spec list, indented or not; a label starts with a capital and has at most `_MAX_LABEL_WORDS` words),
  gives one ``- label: value`` item section per line (the form of a Markdown list item, read by
  `ingest.profile_items.list_item_records`); a ``Label:`` line without a value above them (``Reset sources:``)
  joins their heading path. The block's other lines stay prose.
- Other label/value lines (`ingest.loaders.label_lines`): a block of lines in any usual separator (dot leaders,
  colons, equals signs, an aligned value), indented sub-blocks as scopes, gives one item section per line too.
- INI-style text (``[section]`` and ``key = value`` lines) is read by `ingest.loaders.ini`, and text in AsciiDoc
  markup (delimited ``|===`` tables, or a ``= Title`` with attribute entries) by `ingest.loaders.asciidoc`.
- A fixed-width table (columns aligned by runs of spaces, as in a readme, optionally under a ``----  ----`` rule) is
  read like a PDF's layout-mode table (`ingest.loaders.pdf_tables.layout_tables`): one ``table_row`` section per
  row with its column headers, its lines left out of the prose.

Source: the layout conventions of plain-text technical manuals (RFC-style numbered sections, ``key: value`` spec
lists); no vendor's words are fixed here.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.loaders.asciidoc import asciidoc_sections, document_title, looks_like_asciidoc
from ingest.loaders.common import LoadedDocument, one_line, read_text_file, table_sections, title_from_path
from ingest.loaders.ini import ini_sections, looks_like_ini
from ingest.loaders.label_lines import COLUMN_RULE as _COLUMN_RULE
from ingest.loaders.label_lines import key_value_block
from ingest.loaders.pdf_tables import layout_tables
from knowledge.types import Section

_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")
_CAPS_HEADING = re.compile(r"^[A-Z][A-Z0-9 ,&/()\-]{2,60}$")
#: "4.2.2.1 Per vector slice", "3 Memory", "2.1. Clocks": a section number, then a short title that starts with a
#: capital and does not end a sentence.
_NUMBERED_HEADING = re.compile(r"^\s*(?P<n>\d{1,2}(?:\.\d{1,3}){0,5})\.?\s+(?P<t>[A-Z][^\n]{0,78}[^\s.:;,])\s*$")
_MAX_HEADING_WORDS = 10
#: "Engine clock (sustained):   1,650 MHz": a label (letters first, no sentence end inside), a colon, a value.
_LABEL_LINE = re.compile(r"^\s*(?P<k>[A-Z][^:\n]{0,60}?)\s*:\s+(?P<v>\S.*?)\s*$")
#: Most words of a label (a longer run before a colon is a sentence: "The K9 is organised as a hierarchy: ...").
_MAX_LABEL_WORDS = 6
_LABEL_ONLY = re.compile(r"^\s*(?P<k>[A-Za-z][^:\n.]{0,60}?)\s*:\s*$")
MIN_LABEL_LINES = 2


def load_text(path: Path, source: str) -> LoadedDocument:
    """Load a plain-text file into sections (see module docstring).

    Raises:
        BadInputError: empty or binary file.
    """
    text = read_text_file(path, "plain")
    if looks_like_ini(text):  # a configuration file or device descriptor (`ingest.loaders.ini`)
        return LoadedDocument(sections=ini_sections(text, source), title=title_from_path(source))
    if looks_like_asciidoc(text):  # an AsciiDoc manual saved as text (`ingest.loaders.asciidoc`)
        sections = asciidoc_sections(text, source)
        return LoadedDocument(sections=sections, title=document_title(sections, source))
    sections: list[Section] = []
    headings: list[tuple[int, str]] = []  # open headings, outermost first: (level, text)

    def open_heading(level: int, title: str) -> None:
        while headings and headings[-1][0] >= level:
            headings.pop()
        headings.append((level, title))

    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        while len(lines) >= 2 and _UNDERLINE.match(lines[1]) and len(lines[0].strip()) <= 120:
            numbered = _numbered_level(lines[0])
            open_heading(numbered or (1 if lines[1].strip()[0] == "=" else 2), one_line(lines[0]))
            lines = lines[2:]
        if len(lines) == 1 and _numbered_level(lines[0]):
            open_heading(_numbered_level(lines[0]), one_line(lines[0]))
            continue
        if len(lines) == 1 and _CAPS_HEADING.match(lines[0].strip()):
            open_heading(2, lines[0].strip())  # "SPECIFICATIONS": a section of the document
            continue
        path = tuple(h for _, h in headings)
        items, lines = _label_lines(lines, path, source)
        sections += items
        if not items:  # a tool's or spec sheet's label/value lines in other separators
            block = key_value_block(lines)
            if block is not None:
                entries, lines = block
                sections += [Section(text=f"- {e.label}: {e.value}", source=source, heading_path=path + e.scope)
                             for e in entries]
        rows, lines = _fixed_width_tables(lines)
        for header, cells in rows:
            sections += table_sections(header, cells, source, path)
        body = one_line(" ".join(lines))
        if body:
            sections.append(Section(text=body, source=source, heading_path=path))
    return LoadedDocument(sections=sections, title=title_from_path(source))


def _numbered_level(line: str) -> int:
    """The depth of a numbered heading's section number (``4.2.2.1 Per vector slice`` -> 4), else 0."""
    match = _NUMBERED_HEADING.match(line)
    if not match or len(match.group("t").split()) > _MAX_HEADING_WORDS:
        return 0
    return match.group("n").count(".") + 1


def _label_lines(lines: list[str], path: tuple[str, ...], source: str) -> tuple[list[Section], list[str]]:
    """The ``- label: value`` item sections of a block of label/value lines, and the block's other lines; a block
    with fewer than `MIN_LABEL_LINES` such lines is left whole."""
    def label_line(line: str) -> re.Match | None:
        match = _LABEL_LINE.match(line)
        return match if match and len(match.group("k").split()) <= _MAX_LABEL_WORDS else None

    count = sum(1 for line in lines if label_line(line))
    if count < MIN_LABEL_LINES or 2 * count < len(lines):
        return [], lines
    sections: list[Section] = []
    rest: list[str] = []
    scope: tuple[str, ...] = ()
    for line in lines:
        match = label_line(line)
        only = _LABEL_ONLY.match(line)
        if match:
            sections.append(Section(text=f"- {one_line(match.group('k'))}: {one_line(match.group('v'))}",
                                    source=source, heading_path=path + scope))
        elif only:
            scope = (one_line(only.group("k")),)
        else:
            rest.append(line)
    return sections, rest


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
