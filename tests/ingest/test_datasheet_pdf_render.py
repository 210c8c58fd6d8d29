"""`scripts/datasheet_pdf.py` renders every Markdown table, also one whose long columns squeeze a short one below a
character's width (fpdf2 then raises "Not enough horizontal space to render a single character")."""

from __future__ import annotations

import pypdf

from tests.script_loader import load_script


def test_a_table_of_long_columns_beside_short_ones_renders_every_cell(tmp_path):
    render = load_script("datasheet_pdf")
    long_titles = [f"{name} throughput of the vector pipeline at base clock" for name in "BCDEF"]
    header = ["Unit", *long_titles, "G", "H"]
    row = ["tile", "11", "22", "33", "44", "55", "66", "77"]
    md = tmp_path / "wide.md"
    md.write_text("# Wide table\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n| "
                  + " | ".join(row) + " |\n", encoding="utf-8")
    pdf = render.render_markdown_pdf(md, tmp_path / "wide.pdf")
    text = "".join(page.extract_text() for page in pypdf.PdfReader(pdf).pages)
    assert all(value in text for value in row)
