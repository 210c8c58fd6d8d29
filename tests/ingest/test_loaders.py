"""Loaders: sections with heading paths, table rows that carry their header, PDF clean-up, bad input."""

from pathlib import Path

import pytest

from core.errors import BadInputError
from ingest.loaders import is_supported, load_document
from ingest.loaders.markdown import markdown_sections
from ingest.loaders.pdf import detach_endnote_markers
from ingest.loaders.rst import rst_sections
from tests.ingest.pdfgen import encrypt_pdf, make_pdf

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")


def rows(sections):
    return [s.text for s in sections if s.kind == "table_row"]


def test_markdown_headings_lists_and_pipe_table():
    text = ("---\ntitle: x\n---\n# Chip\n\nIntro text.\n\n## Memory\n\n- item one\n- item two\n\n"
            "Per-unit figures:\n\n| Unit | Size |\n|---|---|\n| L1 | 64 KiB |\n| L2 | 4 MB |\n")
    secs = markdown_sections(text, "chip.md")
    assert secs[0].heading_path == ("Chip",) and secs[0].text == "Intro text."
    assert [s.text for s in secs if s.text.startswith("- ")] == ["- item one", "- item two"]
    assert rows(secs) == ["Per-unit figures: | Unit: L1 | Size: 64 KiB", "Per-unit figures: | Unit: L2 | Size: 4 MB"]
    assert all(s.heading_path == ("Chip", "Memory") for s in secs if s.kind == "table_row")
    assert not any("title: x" in s.text for s in secs)


def test_markdown_html_table_with_row_headers_and_spans():
    text = ("# Units\n\n<table><tr><th/><th>Reads A</th><th>Reads B</th></tr>\n"
            "<tr><th>Writes X</th><td colspan=\"2\">both</td></tr>\n"
            "<tr><th>Writes Y</th><td rowspan=\"2\">ra</td><td>rb</td></tr>\n"
            "<tr><th>Writes Z</th><td>zb</td></tr></table>\n")
    assert rows(markdown_sections(text, "u.md")) == [
        "Writes X | Reads A: both | Reads B: both",
        "Writes Y | Reads A: ra | Reads B: rb",
        "Writes Z | Reads A: ra | Reads B: zb",
    ]


def test_myst_list_table_and_figure_caption():
    text = ("# MI\n\n```{figure} x.png\n---\nname: f\n---\nDie with 40 CUs and a 4MB L2.\n```\n\n"
            "```{list-table} Peak rates\n:header-rows: 1\n\n*\n  - Type\n  - TFLOPS\n*\n  - FP16\n  - 1307.4\n```\n")
    secs = markdown_sections(text, "mi.md")
    assert [s.text for s in secs if s.kind == "caption"] == ["Die with 40 CUs and a 4MB L2."]
    assert rows(secs) == ["Peak rates | Type: FP16 | TFLOPS: 1307.4"]


def test_rst_list_table_rows_carry_far_away_header_and_tab_title():
    header = "\n".join(f"          - Col{i}" for i in range(6))
    text = ("Specs\n=====\n\n.. tab-set::\n\n  .. tab-item:: Accelerators\n\n    .. list-table::\n"
            "        :header-rows: 1\n\n        *\n" + header + "\n        *\n"
            + "\n".join(f"          - v{i}" for i in range(6)) + "\n\nGlossary\n========\n\n**LDS**\n\n"
            "Local data share, see :doc:`lds <lds>`.\n")
    secs = rst_sections(text, "s.rst", ())
    table_rows = rows(secs)
    assert table_rows[0] == "Accelerators | Col0: v0 | Col1: v1 | Col2: v2 | Col3: v3 | Col4: v4 | Col5: v5"
    assert all(s.heading_path == ("Specs", "Accelerators") for s in secs if s.kind == "table_row")
    glossary = [s for s in secs if s.heading_path[:1] == ("Glossary",)]
    assert glossary[0].heading_path == ("Glossary", "LDS")
    assert glossary[0].text == "Local data share, see lds."


def test_wide_rows_also_get_narrow_views_keyed_by_first_cell():
    cells = [f"Column number {i} (units)" for i in range(12)]
    text = "| " + " | ".join(cells) + " |\n|" + "---|" * 12 + "\n| MX9 | " + " | ".join(
        f"value-{i} measured" for i in range(1, 12)) + " |\n"
    texts = rows(markdown_sections(text, "w.md"))
    assert texts[0].startswith("Column number 0 (units): MX9 | Column number 1 (units): value-1 measured")
    assert "value-11" in texts[0]
    views = texts[1:]
    assert len(views) >= 2 and all(v.startswith("Column number 0 (units): MX9 | ") for v in views)
    assert sorted({c for v in views for c in v.split(" | ")[1:]}) == sorted(texts[0].split(" | ")[1:])


def test_html_and_text_loaders(docs):
    html = load_document(docs / "sub" / "notes.html", "sub/notes.html")
    assert html.title == "Z9 notes"
    assert [(s.heading_path, s.text) for s in html.sections] == [
        (("Z9 notes", "Warps"), "A Z9 wavefront has 32 lanes and a block holds at most 1024 threads.")]
    txt = load_document(docs / "errata.txt", "errata.txt")
    assert [(s.heading_path, s.text) for s in txt.sections] == [
        (("Errata",), "The Z9 L2 cache runs at half clock in low-power mode.")]


def test_pdf_headers_stripped_pages_kept_and_markers_detached(tmp_path):
    facts = ["The X1 has 16 units.X100-12 More text follows.", "Its clock is 1.9 GHz.", "It draws 300 W.",
             "Memory is 48 GB."]
    pages = [["ACME X1 DATASHEET", fact, f"Page {i} of 4"] for i, fact in enumerate(facts, start=1)]
    doc = load_document(make_pdf(tmp_path / "x1.pdf", pages, title="ACME X1"), "x1.pdf")
    assert doc.pages == 4 and doc.title == "ACME X1"
    assert [(s.page, s.text) for s in doc.sections] == [
        (1, "The X1 has 16 units. [X100-12] More text follows."), (2, "Its clock is 1.9 GHz."), (3, "It draws 300 W."),
        (4, "Memory is 48 GB.")]


@pytest.mark.parametrize(("raw", "clean"), [
    ("peak theoretical FP8 performance of 2.6 PFLOP/s.MI300-11 For classic",
     "peak theoretical FP8 performance of 2.6 PFLOP/s. [MI300-11] For classic"),
    ("memory bandwidth.MI300-13, MI300-14", "memory bandwidth. [MI300-13, MI300-14]"),
    ("for machine learning. MI300-11 At the same time", "for machine learning. [MI300-11] At the same time"),
    ("version 1.2.3 and COVID-19 stay", "version 1.2.3 and COVID-19 stay"),
])
def test_endnote_markers(raw, clean):
    assert detach_endnote_markers(raw) == clean


@pytest.mark.skipif(not (CORPUS / "amd_cdna3").is_dir(), reason="shared corpus not present")
@pytest.mark.slow
def test_real_white_paper():
    doc = load_document(CORPUS / "amd_cdna3" / "amd-cdna-3-white-paper.pdf", "wp.pdf")
    text = "\n".join(s.text for s in doc.sections)
    assert doc.pages == 27
    assert "WHITE PAPER | INTRODUCING" not in text
    assert "peak theoretical FP8 performance of 2.6 PFLOP/s. [MI300-11]" in text
    l2 = [s for s in doc.sections if s.kind == "table_row" and "L2 CACHE 4 MB" in s.text]
    assert l2 and l2[0].page == 24 and "MI300X DISCRETE GPU" in l2[0].text and l2[0].text.startswith("Table 2.")
    infinity = [s for s in doc.sections if "17.2 TB/s" in s.text and s.page == 11]
    assert infinity and infinity[0].heading_path[-1] == "AMD CDNA™ 3 ARCHITECTURE MEMORY"


@pytest.mark.parametrize(("name", "content", "message"), [
    ("empty.md", b"", "file is empty"),
    ("blank.txt", b"   \n\n", "file is empty"),
    ("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary content, not a Markdown"),
    ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "corrupt PDF"),
    ("fake.pdf", b"hello, I am not a PDF", "not a PDF"),
    ("empty.pdf", b"", "file is empty"),
])
def test_bad_files_give_one_clear_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(BadInputError) as info:
        load_document(path)
    assert message in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_encrypted_pdf_is_rejected(tmp_path):
    plain = make_pdf(tmp_path / "plain.pdf", [["secret text"]])
    locked = encrypt_pdf(plain, tmp_path / "locked.pdf")
    with pytest.raises(BadInputError, match=r"locked\.pdf: PDF is encrypted \(a password is required\)"):
        load_document(locked)


def test_supported_suffixes():
    assert all(is_supported(Path(f"a{s}")) for s in (".pdf", ".md", ".MD", ".rst", ".html", ".htm", ".txt"))
    assert not is_supported(Path("a.svg")) and not is_supported(Path("LICENSE"))


MB = 10**6


@pytest.mark.parametrize(("name", "make", "message"), [
    ("huge.txt", lambda: b"x" * (30 * MB),
     "30.0 MB is above the 20 MB limit for plain text documents; split it into smaller files"),
    ("nowords.txt", lambda: b"x" * (2 * MB), "does not look like a plain-text document: only 0% of its characters "
     "form words (at least 3% expected)"),
    ("numbers.md", lambda: b"| 1 | 2.5 | 3 |\n" * 2000, "does not look like a Markdown document: only 0% of its "
     "characters form words"),
    ("longline.rst", lambda: b"word " * 40_000, "does not look like a reStructuredText document: line 1 is "
     "200,000 characters long (limit 100,000)"),
    ("repeated.md", lambda: b"The same sentence again and again.\n" * 50_000,
     "does not look like a Markdown document: its text repeats itself (compresses"),
    ("repeated.html", lambda: b"<p>The same sentence again and again.</p>" * 50_000,
     "does not look like a HTML document: its text repeats itself"),
])
def test_text_that_is_not_a_document_is_refused_with_one_line(tmp_path, name, make, message):
    path = tmp_path / name
    path.write_bytes(make())
    with pytest.raises(BadInputError) as info:
        load_document(path)
    assert str(info.value).startswith(f"{path}: {message}") and "\n" not in str(info.value)


def test_real_documents_are_text_like(tmp_path):
    """Every text document of the corpus and the shipped notes loads; so do a number-heavy spec table, prose in
    another script and a minified one-line HTML page (the line-length rule skips HTML)."""
    from ingest.loaders.common import check_text_like

    notes = Path(__file__).resolve().parents[2] / "hardware_profiles" / "notes"
    files = [p for p in [*CORPUS.glob("*/*"), *notes.glob("*.md")] if p.suffix in (".md", ".rst", ".txt")]
    assert len(files) >= 15
    for path in files:
        assert load_document(path).sections, path
    table = "| Model | CUs | LDS (KiB) | L2 (MiB) | HBM (GB) | TB/s |\n|---|---|---|---|---|---|\n" + "".join(
        f"| MI{300 + i}X | {i * 8} | 64 | {i * 4} | {i * 24} | {i * 0.7:.1f} |\n" for i in range(1, 60))
    check_text_like(table, Path("specs.md"), "Markdown")
    check_text_like("Память устройства: 192 ГБ HBM3, пропускная способность 5,3 ТБ/с.\n" * 3, Path("ru.txt"),
                    "plain")
    page = tmp_path / "min.html"
    page.write_text("<html><body>" + "".join(f"<h2>Section {i}</h2><p>The accelerator {i} has {i * 4} compute "
                                             f"units and {i * 16} KB of cache per unit, plus notes.</p>"
                                             for i in range(2000)) + "</body></html>")
    assert len(page.read_text().splitlines()) == 1 and len(page.read_text()) > 200_000
    assert len(load_document(page).sections) > 1000
