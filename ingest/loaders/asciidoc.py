"""AsciiDoc loader: section titles, paragraphs, lists, description lists and tables, read line by line.

- Section titles (``= Title``, ``== Section`` ... ``====== Level 5``; Markdown-style ``#`` titles too) give the
  heading path; the document title (level 0) is its first entry.
- Tables: a ``|===`` block (or ``,===`` comma- and ``:===`` colon-separated data) gives one ``table_row`` section
  per body row, carrying the header row and the table's caption (its ``.Title`` line, else the short paragraph
  that introduces it), as Markdown and reStructuredText tables do (`ingest.loaders.common.table_sections`).
  The number of columns is the ``cols`` attribute's (``[cols="1,2,2"]``, ``[cols="3*"]``) or, without one, the
  number of cells on the table's first line. The first row is the header when the attributes say so
  (``options="header"``, ``%header``), or, with no ``noheader`` option, when the first line holds a whole row and a
  blank line follows it (Asciidoctor's implicit header row). A cell specifier before ``|`` (``2+|``, ``a|``,
  ``.^|``) is dropped; a cell spanning N columns (``N+|``) fills N cells, so the columns after it stay aligned.
- A description-list item (``Term:: definition``) gives one ``Term: definition`` paragraph; a list item
  (``* item``, ``- item``, ``. item``) gives one ``- item`` section (the form of a Markdown list item).
- Admonition paragraphs (``NOTE: ...``) and the text of delimited blocks (listing ``----``, literal ``....``,
  example ``====``, sidebar ``****``, quote ``____``, open ``--``) are prose; comments (``//`` lines, ``////``
  blocks), attribute entries (``:name: value``), block attributes (``[...]``), anchors and ``include::`` lines are
  dropped. Inline markup keeps its text (``*bold*``, ``_emphasis_``, `` `mono` ``, ``link:url[text]``,
  ``<<id,text>>``).

Source: the AsciiDoc Language documentation (docs.asciidoctor.org/asciidoc/latest): sections, tables (cols,
header row, cell specifiers), description lists, delimited blocks.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from ingest.loaders.common import (
    LoadedDocument,
    clean,
    one_line,
    open_heading,
    read_text_file,
    table_sections,
    title_from_path,
)
from knowledge.types import Section

_TITLE = re.compile(r"^(={1,6}|#{1,6})\s+(\S.*?)\s*(?:\s\1)?$")
_TABLE_DELIMITER = re.compile(r"^([|,:!])===\s*$")
_BLOCK_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|--)\s*$")
_COMMENT_BLOCK = re.compile(r"^/{4,}\s*$")
_BLOCK_TITLE = re.compile(r"^\.(?![.\s])(\S.*)$")
_ATTRIBUTES = re.compile(r"^\[(.*)\]\s*$")
_ATTRIBUTE_ENTRY = re.compile(r"^:!?[\w\-]+!?:(?:\s.*)?$")
_DESCRIPTION = re.compile(r"^(?P<t>\S.*?)(?::{2,4}|;;)(?:\s+(?P<d>.*))?$")
_LIST_ITEM = re.compile(r"^\s*(?:[*\-]+|\.+|\d+\.)\s+(?P<t>\S.*)$")
_ADMONITION = re.compile(r"^(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION):\s+")


def load_asciidoc(path: Path, source: str) -> LoadedDocument:
    """Load an AsciiDoc file into sections (see module docstring).

    Raises:
        BadInputError: empty or binary file.
    """
    text = read_text_file(path, "AsciiDoc")
    sections = asciidoc_sections(text, source)
    return LoadedDocument(sections=sections, title=document_title(sections, source))


def looks_like_asciidoc(text: str) -> bool:
    """True when plain `text` is written in AsciiDoc markup (a ``.txt`` export of an AsciiDoc manual): a delimited
    table (two ``|===`` lines), or a document title line (``= Title``) followed by attribute entries
    (``:name: value``, at least two) before its first paragraph."""
    lines = [line.rstrip() for line in text.splitlines()]
    if sum(1 for line in lines if _TABLE_DELIMITER.match(line)) >= 2:
        return True
    head = [line for line in lines[:40] if line.strip()]
    if not head or not re.match(r"^=\s+\S", head[0]):
        return False
    return sum(1 for line in head[1:12] if _ATTRIBUTE_ENTRY.match(line)) >= 2


def document_title(sections: list[Section], source: str) -> str:
    """The document's title: the first heading path's first entry, else one made from the file name."""
    return next((s.heading_path[0] for s in sections if s.heading_path), "") or title_from_path(source)


def asciidoc_sections(text: str, source: str) -> list[Section]:
    """Sections of AsciiDoc `text` in reading order (see module docstring)."""
    return _Reader(source).run(text.splitlines())


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.path: list[str] = []
        self.levels: list[int] = []
        self.sections: list[Section] = []
        self.paragraph: list[str] = []
        self.in_item = False
        self.last_prose = ""
        self.block_title = ""
        self.attributes = ""

    def run(self, lines: list[str]) -> list[Section]:
        i = 0
        while i < len(lines):
            line = lines[i].rstrip()
            stripped = line.strip()
            if _COMMENT_BLOCK.match(stripped):
                i = _skip_to(lines, i, stripped)
                continue
            table = _TABLE_DELIMITER.match(stripped)
            if table:
                self._flush()
                end = _skip_to(lines, i, stripped) - 1
                self._table(lines[i + 1:end], table.group(1))
                i = end + 1
                continue
            block = _BLOCK_DELIMITER.match(stripped)
            if block and not self.paragraph:
                end = _skip_to(lines, i, stripped) - 1
                self._add("\n".join(lines[i + 1:end]))
                self.block_title, self.attributes = "", ""
                i = end + 1
                continue
            self._line(line, stripped)
            i += 1
        self._flush()
        return self.sections

    def _line(self, line: str, stripped: str) -> None:
        if not stripped:
            self._flush()
            return
        if stripped.startswith("//") or stripped.startswith("include::") or re.match(r"^\[\[[^\]]*\]\]$", stripped):
            return
        title = _TITLE.match(stripped) if not self.paragraph else None
        if title:
            self._flush()
            self._heading(len(title.group(1)), _inline(title.group(2)))
            return
        if not self.paragraph and _ATTRIBUTE_ENTRY.match(stripped):
            return
        if not self.paragraph and _ATTRIBUTES.match(stripped):
            self.attributes = _ATTRIBUTES.match(stripped).group(1)
            return
        if not self.paragraph and _BLOCK_TITLE.match(stripped):
            self.block_title = _inline(_BLOCK_TITLE.match(stripped).group(1))
            return
        item = _LIST_ITEM.match(line)
        if item:
            self._flush()
            self.paragraph = ["- " + item.group("t")]
            self.in_item = True
            return
        # a description item starts a paragraph, also right after another item (a list with no blank lines)
        described = _DESCRIPTION.match(stripped) if not self.paragraph or self.in_item else None
        if described and "://" not in described.group("t"):
            self._flush()
            term, definition = described.group("t"), described.group("d") or ""
            self.paragraph = [f"{term}: {definition}" if definition else f"{term}:"]
            self.in_item = True
            return
        self.paragraph.append(_ADMONITION.sub("", stripped) if not self.paragraph else stripped)

    def _heading(self, level: int, text: str) -> None:
        open_heading(self.levels, self.path, level, text)
        self.last_prose = ""

    def _flush(self) -> None:
        self.in_item = False
        if self.paragraph:
            self._add(" ".join(self.paragraph))
            self.paragraph = []
            self.block_title, self.attributes = "", ""

    def _add(self, text: str, kind: str = "prose") -> None:
        text = clean(_inline(text))
        if text:
            self.sections.append(Section(text=text, source=self.source, heading_path=tuple(self.path), kind=kind))
            self.last_prose = text

    def _table(self, body: list[str], separator: str) -> None:
        attributes, caption = self.attributes, self.block_title
        self.attributes, self.block_title = "", ""
        header, rows = table_rows(body, separator, attributes)
        lead_in = one_line(self.last_prose)
        caption = caption or (lead_in if 0 < len(lead_in) <= 240 else "")
        self.sections.extend(table_sections(header, rows, self.source, tuple(self.path), caption))
        self.last_prose = ""  # the paragraph before this table does not introduce the next one


def table_rows(body: list[str], separator: str, attributes: str = "") -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the lines between a table's delimiters; `separator` is ``|`` (or ``!`` in a nested
    table), ``,`` or ``:``; `attributes` the block attribute line above the table, without its brackets."""
    options = _options(attributes)
    width = _column_count(attributes)
    if separator in ",:":
        lines = [line for line in body if line.strip()]
        rows = [[c.strip() for c in cells] for cells in csv.reader(lines, delimiter=separator)]
        first_alone = len(body) > 1 and bool(body[0].strip()) and not body[1].strip()
    else:
        cells, first_line_cells, first_alone = _cells(body, separator)
        width = width or first_line_cells or 1
        rows = [cells[n:n + width] for n in range(0, len(cells), width)]
    rows = [[_inline(c) for c in row] for row in rows if any(c.strip() for c in row)]
    has_header = "header" in options or ("noheader" not in options and first_alone)
    if has_header and rows:
        return rows[0], rows[1:]
    return [], rows


def _cells(body: list[str], separator: str) -> tuple[list[str], int, bool]:
    """Every cell of a ``|``-separated table body in order (a cell spanning or duplicated over N columns, ``N+|`` or
    ``N*|``, repeated N times), the number of columns on the first non-blank line, and whether that line stands
    alone (a blank line after it). Text before a line's first separator continues the cell before it."""
    rx = re.compile(r"(?:(?:^|(?<=\s))(?P<spec>(?:\d+(?:\.\d+)?[+*])?(?:\.?[<^>]){0,2}[aehlmsdv]?))?"
                    + re.escape(separator))
    cells: list[str] = []
    first_count, first_alone, seen_first = 0, False, False
    for n, line in enumerate(body):
        if not line.strip():
            continue
        marks = list(rx.finditer(line))
        head = line[:marks[0].start()] if marks else line
        if head.strip() and cells:
            cells[-1] = f"{cells[-1]} {head.strip()}".strip()
        columns = 0
        for k, mark in enumerate(marks):
            stop = marks[k + 1].start() if k + 1 < len(marks) else len(line)
            span = re.match(r"(\d+)(?:\.\d+)?[+*]", mark.group("spec") or "")
            count = int(span.group(1)) if span else 1
            cells.extend([line[mark.end():stop].strip()] * count)
            columns += count
        if not seen_first and marks:
            first_count, seen_first = columns, True
            first_alone = n + 1 < len(body) and not body[n + 1].strip()
    return cells, first_count, first_alone


def _options(attributes: str) -> set[str]:
    """The options of a block attribute line: ``options="header,footer"``, ``opts=header``, ``%header%autowidth``."""
    found = set(re.findall(r"%(\w+)", attributes))
    for value in re.findall(r"\b(?:options|opts)\s*=\s*\"?([\w,\s]+)\"?", attributes):
        found |= {v.strip() for v in value.split(",") if v.strip()}
    return found


def _column_count(attributes: str) -> int:
    """The number of columns the ``cols`` attribute declares (``"1,2,2"`` -> 3; ``"3*"`` -> 3; ``"2*,1"`` -> 3);
    0 when there is none."""
    match = re.search(r"\bcols\s*=\s*\"?([^\"\]]+)\"?", attributes)
    if not match:
        return 0
    total = 0
    for spec in match.group(1).split(","):
        spec = spec.strip()
        repeat = re.match(r"(\d+)\*", spec)
        total += int(repeat.group(1)) if repeat else 1 if spec else 0
    return total


def _skip_to(lines: list[str], start: int, delimiter: str) -> int:
    """The index after the line that closes the block opened at `start` (its delimiter repeated), else the end."""
    for n in range(start + 1, len(lines)):
        if lines[n].strip() == delimiter:
            return n + 1
    return len(lines)


def _inline(text: str) -> str:
    """Text of AsciiDoc inline markup: ``link:url[text]`` and ``url[text]`` keep the text, ``<<id,text>>`` keeps
    the text (or the id), constrained and unconstrained ``*``, ``_``, `` ` ``, ``#`` and ``+`` marks are dropped."""
    text = re.sub(r"(?:link:|mailto:)?(?:https?://\S+?)\[([^\]]*)\]", r"\1", text)
    text = re.sub(r"\blink:\S+?\[([^\]]*)\]", r"\1", text)
    text = re.sub(r"<<([^,>]+),\s*([^>]+)>>", r"\2", text)
    text = re.sub(r"<<([^>]+)>>", r"\1", text)
    text = re.sub(r"\b(?:xref|kbd|btn|menu|footnote|pass):[^\[\s]*\[([^\]]*)\]", r"\1", text)
    text = re.sub(r"\[[\w.#%\-]+\]#([^#]+)#", r"\1", text)  # [.role]#text#
    text = re.sub(r"(\*\*|__|``|##|\+\+)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])([*_`#+])(?=\S)(.+?)(?<=\S)\1(?![\w*])", r"\2", text)
    text = text.replace(" +\n", "\n")
    return re.sub(r"\s\+$", "", text, flags=re.M)
