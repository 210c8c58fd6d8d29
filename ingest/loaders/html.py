"""HTML loader (BeautifulSoup): headings give the section path, tables become one section per row with headers.

Also used by the Markdown loader for HTML blocks (``<table>`` inside Markdown).
"""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

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

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = {"p", "li", "pre", "blockquote", "dt", "dd", "figcaption", "caption", "summary", "address"}
_SKIP = {"script", "style", "noscript", "nav", "head", "svg", "template", "iframe"}


def load_html(path: Path, source: str) -> LoadedDocument:
    """Load an HTML file into sections.

    Raises:
        BadInputError: empty or binary file, or no text in it.
    """
    text = read_text_file(path, "HTML")
    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    title = one_line(title_tag.get_text()) if title_tag else title_from_path(source)
    body = soup.body or soup
    walker = _Walker(source, [])
    walker.walk(body)
    return LoadedDocument(sections=walker.sections, title=title)


def html_fragment_sections(html: str, source: str, heading_path: tuple[str, ...], lead_in: str = "") -> list[Section]:
    """Sections of an HTML fragment found inside another document (e.g. a table in Markdown).

    `heading_path` is the enclosing document's section; `lead_in` (the paragraph before the fragment) becomes the
    caption of a table that has none.
    """
    walker = _Walker(source, list(heading_path), lead_in=lead_in)
    walker.walk(BeautifulSoup(html, "html.parser"))
    return walker.sections


def table_grid(table: Tag) -> tuple[list[str], list[list[str]], str]:
    """(header, data rows, caption) of an HTML table, with ``rowspan``/``colspan`` cells repeated into the grid.

    The header is the last ``<thead>`` row, else the first row when it holds only ``<th>`` cells, else empty.
    """
    caption_tag = table.find("caption")
    caption = one_line(caption_tag.get_text(" ")) if caption_tag else ""
    rows_tags = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    grid: list[list[str]] = []
    pending: dict[int, tuple[str, int]] = {}
    thead_rows = 0
    for tr in rows_tags:
        row: list[str] = []
        cells = [c for c in tr.find_all(["td", "th"], recursive=False)]
        col = 0
        cell_iter = iter(cells)
        while True:
            if col in pending:
                value, left = pending[col]
                row.append(value)
                if left <= 1:
                    del pending[col]
                else:
                    pending[col] = (value, left - 1)
                col += 1
                continue
            cell = next(cell_iter, None)
            if cell is None:
                break
            value = one_line(cell.get_text(" "))
            span = _int_attr(cell, "colspan")
            down = _int_attr(cell, "rowspan")
            for _ in range(span):
                row.append(value)
                if down > 1:
                    pending[col] = (value, down - 1)
                col += 1
        grid.append(row)
        if tr.find_parent("thead") is not None:
            thead_rows = len(grid)
    if not grid:
        return [], [], caption
    if thead_rows:
        return grid[thead_rows - 1], grid[thead_rows:], caption
    first_cells = rows_tags[0].find_all(["td", "th"], recursive=False)
    if first_cells and all(c.name == "th" for c in first_cells):
        return grid[0], grid[1:], caption
    return [], grid, caption


def _int_attr(tag: Tag, name: str) -> int:
    try:
        return max(1, int(str(tag.get(name, "1")).strip() or 1))
    except ValueError:
        return 1


class _Walker:
    """Depth-first walk that emits prose per block element and rows per table, tracking the heading path."""

    def __init__(self, source: str, path: list[str], lead_in: str = "") -> None:
        self.source = source
        self.path = path
        self.levels: list[int] = []
        self.sections: list[Section] = []
        self.last_prose = lead_in

    def walk(self, node: Tag) -> None:
        loose: list[str] = []
        for child in node.children:
            if isinstance(child, NavigableString):
                if child.__class__.__name__ in ("Comment", "Doctype", "Declaration", "ProcessingInstruction"):
                    continue
                loose.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in _SKIP:
                continue
            if child.name in _HEADINGS or child.name == "table" or child.name in _BLOCKS or _has_blocks(child):
                self._flush(loose)
                loose = []
                self._element(child)
            else:
                loose.append(child.get_text(" "))
        self._flush(loose)

    def _element(self, el: Tag) -> None:
        if el.name in _HEADINGS:
            self._heading(_HEADINGS[el.name], one_line(el.get_text(" ")))
        elif el.name == "dl":
            self._definitions(el)
        elif el.name == "table":
            header, rows, caption = table_grid(el)
            caption = caption or _lead_in(self.last_prose)
            self.sections.extend(table_sections(header, rows, self.source, tuple(self.path), caption))
        elif el.name in _BLOCKS and not _has_blocks(el):
            text = clean(el.get_text(" ") if el.name != "pre" else el.get_text())
            self._prose(("- " + text) if el.name == "li" else text, "caption" if "caption" in el.name else "prose")
        else:
            self.walk(el)

    def _definitions(self, dl: Tag) -> None:
        """A definition list as one list item ``- term: definition`` per term, so a term stays with what defines it
        and each entry stays an item of its own when the chunker joins consecutive prose (a ``<dl>`` of a spec page
        is a key/value list: HTML Living Standard, 4.4.9 "The dl element": name-value groups)."""
        term = ""
        for item in dl.find_all(["dt", "dd"], recursive=False):
            text = one_line(item.get_text(" "))
            if item.name == "dt":
                term = text
            elif text:
                self._prose(f"- {term}: {text}" if term else f"- {text}", "prose")

    def _heading(self, level: int, text: str) -> None:
        if not text:
            return
        open_heading(self.levels, self.path, level, text)
        self.last_prose = ""

    def _flush(self, parts: list[str]) -> None:
        text = clean(" ".join(parts))
        if text:
            self._prose(text, "prose")

    def _prose(self, text: str, kind: str) -> None:
        if not text.strip():
            return
        self.sections.append(Section(text=text, source=self.source, heading_path=tuple(self.path), kind=kind))
        self.last_prose = text


def _has_blocks(el: Tag) -> bool:
    return el.find(list(_BLOCKS) + list(_HEADINGS) + ["table"]) is not None


def _lead_in(paragraph: str) -> str:
    """A short paragraph right before a table (often ending in ':') names it; long prose does not."""
    text = one_line(paragraph)
    return text if 0 < len(text) <= 240 else ""
