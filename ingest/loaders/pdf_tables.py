"""Tables of a PDF page from pypdf's layout-mode text: rows and columns from where the text stands on the line.

pypdf's plain text runs a table's cells together ("Vector cores 48", "Scratchpad per workgroup (max) 64 KB"), so
the label and the value of a row cannot be told apart. Its layout mode (``extract_text(extraction_mode="layout")``)
keeps each text run at its horizontal position, so cells are separated by runs of spaces and a column's cells
start at the same position on every line. A table here is a run of lines (blank lines between them allowed) that:

- has at least `MIN_ROWS` lines of two or more cells (cells: text separated by `GAP` or more spaces);
- keeps its columns: the cells of every line start where the first line's (the header's) cells start, within
  `ALIGN` characters (a header without a corner label has one cell less, and starts at the second column);
- has a first column of short labels (two-column prose, whose columns are long, is not a table; a line whose first
  cell is far longer than the labels above it is prose after the table).

Blank lines separate rows; the lines of one row (a cell that wraps) are joined per column, and a line without a
first-column label belongs to the labelled line of its row (labels are often centered on a wrapped cell). Each table
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
#: Most lines a header whose column titles wrap may take.
MAX_HEADER_LINES = 6
#: A cell: the shortest run of text that `GAP` spaces (or the line's end) follow, so a one-character cell ("4")
#: is not joined to the next one.
_CELL_SPLIT = re.compile(r"\S(?:.*?\S)??(?=\s{" + str(GAP) + r",}|\s*$)")


@dataclass
class LayoutTable:
    """A table read from layout text: header cells, rows of cells, and the text of its lines (whitespace
    collapsed; the first `header_lines` are the header's) so the loader can drop them from the page's plain
    text."""

    header: list[str]
    rows: list[list[str]]
    lines: list[str] = field(default_factory=list)
    header_lines: int = 1


def cells_of(line: str) -> list[tuple[int, str]]:
    """(start column, text) of each cell of a layout line."""
    return [(m.start(), m.group(0)) for m in _CELL_SPLIT.finditer(line)]


def layout_tables(layout_text: str, stops: set[str] | None = None) -> list[LayoutTable]:
    """The tables of one page's layout-mode text (see module docstring), top to bottom. A line whose text with
    whitespace removed is in `stops` (a heading known by its type size) ends a table and never starts one."""
    lines = layout_text.splitlines()
    stops = stops or set()
    tables: list[LayoutTable] = []
    i = 0
    while i < len(lines):
        table, end = _table_at(lines, i, stops)
        if table is not None:
            tables.append(table)
            i = end
        else:
            i += 1
    return tables


def _table_at(lines: list[str], start: int, stops: set[str]) -> tuple[LayoutTable | None, int]:
    if not cells_of(lines[start]) or "".join(lines[start].split()) in stops:
        return None, start + 1
    header, used = _header_block(lines, start, stops)
    if len(header) < 2:
        return None, start + 1
    heads = len(used)
    columns = [s for s, _ in header]
    blocks: list[list[list[tuple[int, str]]]] = []
    block: list[list[tuple[int, str]]] = []
    blank = 0
    j = used[-1] + 1
    while j < len(lines):
        cells = cells_of(lines[j])
        if cells and "".join(lines[j].split()) in stops:
            break
        if not cells:
            if block:
                blocks.append(block)
                block = []
            blank += 1
            if blank > 2:
                break
            j += 1
            continue
        blank = 0
        if not blocks and not block and len(cells) == len(header) + 1 and cells[0][0] < columns[0] - ALIGN:
            columns = [cells[0][0]] + columns  # the header has no corner label
            header = [(cells[0][0], "")] + header
        first = cells[0][1] if cells[0][0] <= columns[0] + ALIGN else ""
        longest = max([len(c[0][1]) for b in blocks + [block] for c in b if c[0][0] <= columns[0] + ALIGN]
                      + [len(header[0][1])])
        if not _aligned(cells, columns) or len(first) > max(MAX_LABEL_CHARS, 1.5 * longest):
            if block and all(len(c) == 1 and c[0][0] <= columns[0] + ALIGN for c in block):
                del used[-len(block):]  # a heading that leads into the prose below the table
                block = []
            break
        block.append(cells)
        used.append(j)
        j += 1
    if block:
        blocks.append(block)
    while blocks and all(len(c) == 1 and c[0][0] <= columns[0] + ALIGN for c in blocks[-1]):
        del used[-len(blocks.pop()):]  # label-only lines after the last row: a sentence or heading below the table
    head_more: list[tuple[int, str]] = []
    if blocks and not any(cells[0][0] <= columns[0] + ALIGN for cells in blocks[0]):
        head_more = [c for cells in blocks.pop(0) for c in cells]  # the header's wrapped cells ("Capacit" / "y")
    rows = _rows(blocks, columns)
    if len(rows) + 1 < MIN_ROWS or not any(len([c for c in r if c]) >= 2 for r in rows):
        return None, start + 1
    labels = sorted(len(r[0]) for r in rows if r[0])
    if not labels or labels[len(labels) // 2] > MAX_LABEL_CHARS:
        return None, start + 1
    head = _place(header + head_more, columns)
    text_lines = [" ".join(lines[k].split()) for k in used]
    return LayoutTable(header=head, rows=rows, lines=text_lines, header_lines=heads), used[-1] + 1


def _header_block(lines: list[str], start: int, stops: set[str]) -> tuple[list[tuple[int, str]], list[int]]:
    """The header of a table whose column titles wrap over several lines (a wide table's narrow columns): the
    lines from `start` up to the first blank line (at most `MAX_HEADER_LINES`), none of which holds a number
    outside parentheses, with no cell longer than `MAX_LABEL_CHARS` (a line of prose is no header). Columns
    start where the block's cells and the first row's cells start. Returns the header's cells (one per column,
    the lines of a column joined top to bottom) and the line indexes used; a one-line header otherwise."""
    one = cells_of(lines[start])
    end = start + 1
    while end < len(lines) and end - start < MAX_HEADER_LINES and cells_of(lines[end]) \
            and "".join(lines[end].split()) not in stops:
        end += 1
    block = [cells_of(lines[k]) for k in range(start, end)]
    numbered = any(re.search(r"\d", re.sub(r"\([^()]*\)", "", t)) for cells in block[1:] for _, t in cells
                   if not re.fullmatch(r"\d?[A-Za-z/()%:]*\d?[A-Za-z/()%:]*", t))
    if end - start == 1 or numbered or any(len(t) > MAX_LABEL_CHARS for cells in block for _, t in cells):
        return one, [start]
    after = next((cells_of(lines[k]) for k in range(end, min(end + 3, len(lines))) if cells_of(lines[k])), [])
    starts: list[int] = []
    for at in sorted(s for cells in block + [after] for s, _ in cells):
        if not starts or at - starts[-1] > ALIGN:
            starts.append(at)
    if len(starts) < len(one):
        return one, [start]
    pieces = [p for cells in block for c in cells for p in _split_at(c, starts)]
    cells = [(c, t) for c, t in zip(starts, _place(pieces, starts)) if t]
    return cells, list(range(start, end))


def _split_at(cell: tuple[int, str], starts: list[int]) -> list[tuple[int, str]]:
    """A header cell cut where a column starts inside it after a space (narrow columns two spaces apart:
    "hi  arr" over the columns of "1   48")."""
    at, text = cell
    cuts = [c - at for c in starts if at < c < at + len(text) and text[c - at - 1] == " " and text[c - at] != " "]
    out, prev = [], 0
    for cut in cuts + [len(text)]:
        if text[prev:cut].strip():
            out.append((at + prev, text[prev:cut].strip()))
        prev = cut
    return out


def _rows(blocks: list[list[list[tuple[int, str]]]], columns: list[int]) -> list[list[str]]:
    """Rows of the table from its blocks of lines (blocks are separated by blank lines): a line with a label in
    the first column starts a row; lines without one belong to the row of the label nearest above them, or, before
    the first label of a block, to the first (a label centered in a cell that wraps over several lines)."""
    rows: list[list[str]] = []
    for block in blocks:
        labelled = [i for i, cells in enumerate(block) if cells[0][0] <= columns[0] + ALIGN]
        if len([cells for cells in block if len(cells) > 1 or cells[0][0] > columns[0] + ALIGN]) == 1:
            labelled = labelled[:1]  # one line of values: the block is one row, its label wrapped around them
        if not labelled:  # continuation lines of the row above
            if rows:
                rows[-1] = _merge(rows[-1], _place([c for cells in block for c in cells], columns))
            continue
        groups = [block[:labelled[1]] if len(labelled) > 1 else block]
        for k, at in enumerate(labelled[1:], start=1):
            end = labelled[k + 1] if k + 1 < len(labelled) else len(block)
            groups.append(block[at:end])
        for group in groups:
            rows.append(_place([c for cells in group for c in cells], columns))
    return rows


def _join(a: str, b: str) -> str:
    """Two lines of one cell joined: with a space, except a number broken over the lines ("1,4" / "00")."""
    if not a or not b:
        return a or b
    broken_number = re.search(r"(?:^|\s)[\d,.]*\d[\d,.]*$", a) and b[0].isdigit() and not re.search(r"\s", b)
    return a + b if broken_number else f"{a} {b}"


def _merge(a: list[str], b: list[str]) -> list[str]:
    return [_join(x, y) for x, y in zip(a, b)]


def _aligned(cells: list[tuple[int, str]], columns: list[int]) -> bool:
    """Every cell starts at a column start (within `ALIGN`) and ends before the next column starts: the line
    belongs to the table (a line whose cells start elsewhere begins another table or is not one; a line of prose
    runs across the columns)."""
    for start, text in cells:
        column = next((k for k, c in enumerate(columns) if abs(start - c) <= ALIGN), None)
        if column is None:
            return False
        if column + 1 < len(columns) and start + len(text) > columns[column + 1]:
            return False
    return True


def _place(cells: list[tuple[int, str]], columns: list[int]) -> list[str]:
    """Cells put in their columns (the column whose start is nearest to the cell's), in reading order; text of
    several lines in one column is joined."""
    out = [""] * len(columns)
    for cell in cells:
        start, text = cell[0], cell[1]
        column = min(range(len(columns)), key=lambda k: (abs(columns[k] - start), k))
        out[column] = _join(out[column], text)
    return out
