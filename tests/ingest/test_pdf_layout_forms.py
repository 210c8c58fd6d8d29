"""A PDF's tables, headings and paragraphs read as its Markdown form's (issue 18), for PDFs not made by the
datasheet renderer: text placed in columns with matplotlib's PDF backend, and a wide fpdf2 grid whose column titles
and labels wrap. Vocabulary unlike the shipped datasheets (looms, bobbins, warp beams)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.loaders import load_document

_TITLE = "Quillmark Q-series loom processors"
_TABLE = [("Attribute", "Q-7", "Q-9"), ("Looms", "40", "56"), ("Bobbin store per loom", "96 KiB", "128 KiB"),
          ("Beam rate", "1,450 MHz", "1,610 MHz"), ("Thread bundle", "24 threads", "24 threads")]


def _matplotlib_pdf(path: Path) -> Path:
    """One A4 page: a 16 pt title, 13 pt headings, 10 pt text lines and a 9 pt table placed at three x positions."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("pdf", force=True)
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8.27, 11.69))
    y = 0.95

    def line(text: str, size: float = 10, step: float = 0.018) -> None:
        nonlocal y
        fig.text(0.08, y, text, fontsize=size)
        y -= step

    line(_TITLE, 16, 0.035)
    line("Each loom is a cluster of shuttles that share one bobbin store; the Q-7 and the Q-9 differ only")
    line("in how many looms they enable and how fast the warp beam turns.", step=0.03)
    line("Short note one.", step=0.03)
    line("Short note two.", step=0.03)
    line("Loom resources by model", 13, 0.03)
    for cells in _TABLE:
        for x, cell in zip((0.08, 0.45, 0.65), cells):
            fig.text(x, y, cell, fontsize=9)
        y -= 0.022
    y -= 0.01
    line("Figures for the Q-9 assume its larger cooling plate.", step=0.03)
    line("Older looms", 13, 0.03)
    line("The earlier Q-5 loom processor had 24 looms and a 1,200 MHz beam rate.")
    fig.savefig(path)
    plt.close(fig)
    return path


def _markdown(path: Path) -> Path:
    rows = ["| " + " | ".join(r) + " |" for r in _TABLE]
    rows.insert(1, "|---|---|---|")
    path.write_text(f"# {_TITLE}\n\nEach loom is a cluster of shuttles that share one bobbin store; the Q-7 and the "
                    "Q-9 differ only in how many looms they enable and how fast the warp beam turns.\n\n"
                    "Short note one.\n\nShort note two.\n\n## Loom resources by model\n\n" + "\n".join(rows)
                    + "\n\nFigures for the Q-9 assume its larger cooling plate.\n\n## Older looms\n\n"
                    "The earlier Q-5 loom processor had 24 looms and a 1,200 MHz beam rate.\n", encoding="utf-8")
    return path


def _view(path: Path) -> list[tuple[str, tuple[str, ...], str]]:
    """(kind, heading path, text) of each section, headings' own caption sections left out."""
    out = []
    for s in load_document(path).sections:
        if not (s.kind == "caption" and s.text == s.heading_path[-1]):
            out.append((s.kind if s.kind == "table_row" else "text", tuple(s.heading_path), s.text))
    return out


def test_a_matplotlib_pdf_reads_as_its_markdown_form(tmp_path):
    pdf = _view(_matplotlib_pdf(tmp_path / "quillmark.pdf"))
    md = _view(_markdown(tmp_path / "quillmark.md"))
    assert [r for r in pdf if r[0] == "table_row"] == [r for r in md if r[0] == "table_row"]
    assert "Attribute: Bobbin store per loom | Q-7: 96 KiB | Q-9: 128 KiB" in [r[2] for r in pdf]
    assert pdf == md  # title, headings by type size, paragraphs by the gaps between them


def test_a_wide_grid_with_wrapped_titles_and_labels(tmp_path):
    """Narrow columns wrap their titles over several lines (and break words and numbers); a long label wraps
    around its row's values. Each row is still one table_row with every column's title."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=9)
    rows = [["Model", "Shuttles per loom", "Bobbin store (KiB)", "Beam (MHz)", "Weave rate (Gpicks/s)"],
            ["Q-5", "12", "64", "1,200", "11,520"],
            ["Q-9 (sampling, late 2029 only)", "16", "128", "1,610", "23,184"]]
    with pdf.table(col_widths=(14, 9, 9, 8, 8), text_align="LEFT") as table:
        for cells in rows:
            row = table.row()
            for cell in cells:
                row.cell(cell)
    path = tmp_path / "grid.pdf"
    pdf.output(str(path))
    got = [s.text for s in load_document(path).sections if s.kind == "table_row"]
    assert len(got) == 2, got
    assert got[1].startswith("Model: Q-9 (sampling, late 2029 only) | ")
    assert "| 1,610 |" in got[1].replace(": 1,610 |", "| 1,610 |") and got[1].endswith(": 23,184")
    assert "Beam (MHz): 1,610" in got[1]
