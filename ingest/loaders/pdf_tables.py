"""Tables of a PDF page from pypdf's layout-mode text: rows and columns from where the text stands on the line.

pypdf's plain text runs a table's cells together ("Vector cores 48", "Scratchpad per workgroup (max) 64 KB"), so
the label and the value of a row cannot be told apart. Its layout mode (``extract_text(extraction_mode="layout")``)
keeps each text run at its horizontal position, so cells are separated by runs of spaces and a column's cells
start at the same position on every line. A table here is a run of lines (blank lines between them allowed) that:

- has at least `MIN_ROWS` lines of two or more cells (cells: text separated by `GAP` or more spaces);
- keeps its columns: the cells of every line start where the first line's (the header's) cells start, within
  `ALIGN` characters (a header without a corner label has one cell less, and starts at the second column);
- has a first column of short labels (two-column prose, whose columns are long, is not a table).

A line with one cell that starts under a later column continues the cell above it (a wrapped cell). Each table
becomes a header and rows of cells; the loader renders them like Markdown and HTML tables, one ``table_row``
section per row (`ingest.loaders.common.table_sections`), and drops the table's lines from the prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Spaces that separate two cells of a line (pypdf's layout mode keeps one or two inside a cell's text).
GAP = 3
#: How far (characters) a cell may start from its column's start.
ALIGN = 2
#: Lines with two or more cells a table needs (header included).
MIN_ROWS = 3
#: Longest median label of a table's first column (longer: columns of prose).
MAX_LABEL_CHARS = 48
_CELL_SPLIT = re.compile(r"\S(?:.*?\S)?(?=\s{" + str(GAP) + r",}|\s*$)")


@dataclass
class LayoutTable:
    """A table read from layout text: header cells, rows of cells, and the text of its lines (whitespace
    collapsed) so the loader can drop them from the page's plain text."""

    header: list[str]
    rows: list[list[str]]
    lines: list[str] = field(default_factory=list)


def cells_of(line: str) -> list[tuple[int, str]]:
    """(start column, text) of each cell of a layout line."""
    return [(m.start(), m.group(0)) for m in _CELL_SPLIT.finditer(line)]


def layout_tables(layout_text: str) -> list[LayoutTable]:
    """The tables of one page's layout-mode text (see module docstring), top to bottom."""
    lines = layout_text.splitlines()
    tables: list[LayoutTable] = []
    i = 0
    while i < len(lines):
        table, end = _table_at(lines, i)
        if table is not None:
            tables.append(table)
            i = end
        else:
            i += 1
    return tables


def _table_at(lines: list[str], start: int) -> tuple[LayoutTable | None, int]:
    header = cells_of(lines[start])
    if len(header) < 2:
        return None, start + 1
    columns = [s for s, _ in header]
    rows: list[list[tuple[int, str]]] = []
    used = [start]
    blank = 0
    j = start + 1
    while j < len(lines):
        cells = cells_of(lines[j])
        if not cells:
            blank += 1
            if blank > 2:
                break
            j += 1
            continue
        blank = 0
        if len(cells) >= 2 and _aligned(cells, columns):
            rows.append(cells)
        elif len(cells) == 1 and rows and cells[0][0] >= columns[1] - ALIGN:
            rows[-1] = rows[-1] + [(cells[0][0], cells[0][1], "continued")]  # type: ignore[list-item]
        elif len(cells) >= 2 and not rows and len(header) == len(cells) - 1:
            columns = [cells[0][0]] + columns  # the header has no corner label
            header = [(cells[0][0], "")] + header
            rows.append(cells)
        else:
            break
        used.append(j)
        j += 1
    if len(rows) + 1 < MIN_ROWS:
        return None, start + 1
    grid = [_place(cells, columns) for cells in rows]
    labels = sorted(len(r[0]) for r in grid if r[0])
    if not labels or labels[len(labels) // 2] > MAX_LABEL_CHARS:
        return None, start + 1
    head = _place(header, columns)
    text_lines = [" ".join(lines[k].split()) for k in used]
    return LayoutTable(header=head, rows=grid, lines=text_lines), used[-1] + 1


def _aligned(cells: list[tuple[int, str]], columns: list[int]) -> bool:
    """Every cell starts at a column start (within `ALIGN`): the line belongs to the table (a line whose cells
    start elsewhere begins another table or is not one)."""
    return all(any(abs(s - c) <= ALIGN for c in columns) for s, _ in cells)


def _place(cells, columns: list[int]) -> list[str]:
    """Cells put in their columns (the column whose start is nearest to the cell's); continuation text is added
    to the cell of its column."""
    out = [""] * len(columns)
    if len(cells) == len(columns) and not any(len(c) == 3 for c in cells):
        return [c[1] for c in cells]
    for cell in cells:
        start, text = cell[0], cell[1]
        column = min(range(len(columns)), key=lambda k: (abs(columns[k] - start), k))
        out[column] = f"{out[column]} {text}".strip()
    return out
