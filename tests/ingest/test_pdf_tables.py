"""PDF tables read from pypdf's layout-mode text (PDFs written by fpdf2 here, as a vendor's would be)."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from ingest.loaders import load_document
from ingest.loaders.pdf_tables import cells_of, layout_tables


def _pdf(path: Path, blocks: list) -> Path:
    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    for block in blocks:
        if isinstance(block, str):
            pdf.multi_cell(0, 5, block, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
            continue
        with pdf.table(col_widths=tuple(40 if i else 30 for i in range(len(block[0]))), text_align="LEFT") as t:
            for row in block:
                r = t.row()
                for cell in row:
                    r.cell(cell)
        pdf.ln(4)
    pdf.output(str(path))
    return path


def test_cells_are_runs_of_text_between_wide_gaps():
    assert cells_of("Tile SRAM      96 KiB per tile   x") == [(0, "Tile SRAM"), (15, "96 KiB per tile"), (33, "x")]


def test_two_tables_a_wrapped_cell_and_prose(tmp_path):
    path = _pdf(tmp_path / "q9.pdf", [
        "The Q9 accelerator is built from 40 weaver cores; this paragraph is long enough to wrap over two lines of "
        "the page so that it reads as running text and not as a table.",
        [["Term", "Meaning"], ["Weaver core", "The compute unit of the Q9: it runs work-groups and owns its weave "
                                              "store and registers, and this text is long enough to wrap in its cell."],
         ["Skein", "32 threads issued together."]],
        [["Resource", "Q9", "Q8"], ["Weaver cores", "40", "32"], ["Weave store", "96 KiB", "64 KiB"]],
    ])
    from pypdf import PdfReader

    tables = layout_tables(PdfReader(path).pages[0].extract_text(extraction_mode="layout"))
    assert [t.header for t in tables] == [["Term", "Meaning"], ["Resource", "Q9", "Q8"]]
    assert tables[0].rows[0][0] == "Weaver core" and tables[0].rows[0][1].endswith("long enough to wrap in its cell.")
    assert tables[1].rows == [["Weaver cores", "40", "32"], ["Weave store", "96 KiB", "64 KiB"]]
    sections = load_document(path).sections
    rows = [s.text for s in sections if s.kind == "table_row"]
    assert "Resource: Weaver cores | Q9: 40 | Q8: 32" in rows and len(rows) == 4
    prose = " ".join(s.text for s in sections if s.kind != "table_row")
    assert "built from 40 weaver cores" in prose and "Weaver cores 40 32" not in prose


def test_a_heading_line_is_known_by_its_shape():
    """Numbered headings and revision entries are headings; sentences, captions and spec lines are not."""
    from ingest.loaders.pdf import is_heading_line

    assert is_heading_line("4.2.1 Per chip") and is_heading_line("9. Errata to version 2.0 of this guide")
    assert is_heading_line("Version 3 (2027-05)") and is_heading_line("Revision C")
    assert not is_heading_line("1. Connect the card to the host.")
    assert not is_heading_line("Table 2. Memory")
    assert not is_heading_line("2 x 64 GB HBM3 at 3.2 TB/s")
