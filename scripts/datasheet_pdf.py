"""Render a Markdown datasheet to PDF (fpdf2), the way a vendor's PDF datasheet lays it out: headings in bold,
paragraphs wrapped to the page width, bullet items, and tables drawn as ruled grids whose long cells wrap.

Test data tooling (issue 18): the PDF form of each Markdown datasheet under ``tests/data/datasheets*/`` is made
with this at test time, so that onboarding it can be checked against the Markdown form. Needs ``fpdf2`` (a test
dependency); Latin-1 text is set in the PDF core font Helvetica, other text in DejaVu Sans, the Unicode TrueType
font matplotlib ships (a dependency), so dashes and multiplication signs survive into the PDF's text layer.

Usage: ``python scripts/datasheet_pdf.py IN.md OUT.pdf``
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_HEADING_SIZES = {1: 16, 2: 13, 3: 11}
_BODY_SIZE = 10
_LINE_MM = 5.0


def render_markdown_pdf(markdown_path: Path, pdf_path: Path) -> Path:
    """Write the PDF form of `markdown_path` to `pdf_path` and return `pdf_path`.

    Raises:
        ImportError: fpdf2 or markdown-it-py is not installed.
    """
    from fpdf import FPDF
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(Path(markdown_path).read_text(encoding="utf-8"))
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.set_title(Path(markdown_path).stem)
    global _FONT
    _FONT = _font_for(pdf, Path(markdown_path).read_text(encoding="utf-8"))
    pdf.add_page()
    i = 0
    in_list = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            pdf.ln(2)
            pdf.set_font(_FONT, "B", _HEADING_SIZES.get(level, 11))
            pdf.multi_cell(0, 7, _inline(tokens[i + 1].content), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
            i += 3
            continue
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            in_list += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            in_list -= 1
        elif tok.type == "inline":
            pdf.set_font(_FONT, "", _BODY_SIZE)
            text = ("- " if in_list else "") + _inline(tok.content)
            pdf.multi_cell(0, _LINE_MM, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif tok.type == "table_open":
            i = _table(pdf, tokens, i)
            continue
        i += 1
    pdf.output(str(pdf_path))
    return Path(pdf_path)


_FONT = "Helvetica"


def _font_for(pdf, text: str) -> str:
    """The PDF core font Helvetica for Latin-1 text; otherwise matplotlib's DejaVu Sans (regular and bold),
    registered with `pdf`, which has the dashes and signs Helvetica lacks."""
    try:
        text.encode("latin-1")
        return "Helvetica"
    except UnicodeEncodeError:
        pass
    import matplotlib

    fonts = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    pdf.add_font("DejaVu", "", str(fonts / "DejaVuSans.ttf"))
    pdf.add_font("DejaVu", "B", str(fonts / "DejaVuSans-Bold.ttf"))
    return "DejaVu"


def _inline(text: str) -> str:
    """Markdown inline markup removed: emphasis, code ticks, links (their text kept)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"(\*\*|\*|`|__)", "", text).strip()


def _table(pdf, tokens, i: int) -> int:
    """Draw the table starting at token `i`; returns the index after its ``table_close``."""
    rows: list[list[str]] = []
    row: list[str] = []
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            rows.append(row)
        elif tok.type == "inline":
            row.append(_inline(tok.content))
        i += 1
    if rows:
        _draw_table(pdf, rows)
        pdf.ln(3)
    return i + 1


def _draw_table(pdf, rows: list[list[str]]) -> None:
    """`rows` as a ruled grid in the body size less one; a grid whose columns are too narrow for one character at
    that size (fpdf2's FPDFException, raised while it lays out the cells, before it draws) is set again at
    `_SMALL_TABLE_SIZE` with less padding, and failing that each row becomes a line of ``|``-separated cells."""
    from fpdf.errors import FPDFException

    widths = _column_widths(rows)
    for size, padding in ((_BODY_SIZE - 1, 1.0), (_SMALL_TABLE_SIZE, 0.3)):
        pdf.set_font(_FONT, "", size)
        try:
            with pdf.table(col_widths=widths, text_align="LEFT", first_row_as_headings=True, line_height=_LINE_MM,
                           padding=padding) as table:
                for cells in rows:
                    out = table.row()
                    for cell in cells:
                        out.cell(cell)
            return
        except FPDFException:
            continue
    pdf.set_font(_FONT, "", _SMALL_TABLE_SIZE)
    for cells in rows:
        pdf.multi_cell(0, _LINE_MM, " | ".join(cells), new_x="LMARGIN", new_y="NEXT")


#: Narrowest column share of the table's width: a column narrower than its padding plus one character makes fpdf2
#: raise "Not enough horizontal space to render a single character" (a wide table beside one short column).
_MIN_COLUMN_SHARE = 0.4
#: Type size of a grid too wide for the body size (points).
_SMALL_TABLE_SIZE = 5


def _column_widths(rows: list[list[str]]) -> tuple[float, ...]:
    """Relative column widths from the longest cell of each column (capped, so long text wraps), none below
    `_MIN_COLUMN_SHARE` of an equal share."""
    columns = max(len(r) for r in rows)
    longest = [max((len(r[c]) for r in rows if c < len(r)), default=1) for c in range(columns)]
    widths = [float(min(max(n, 6), 60)) for n in longest]
    floor = _MIN_COLUMN_SHARE * sum(widths) / columns
    return tuple(max(w, floor) for w in widths)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/datasheet_pdf.py IN.md OUT.pdf")
    print(render_markdown_pdf(Path(sys.argv[1]), Path(sys.argv[2])))
