"""Label/value lines outside tables: bold-label paragraphs (``**Label** — value``) and list items whose label
ends in an em or en dash (fictional Orrin Q3 documents; every expected value computed by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.markdown import markdown_sections
from ingest.profile_extract import extract_profile
from ingest.profile_items import list_item_records
from ingest.profile_text import chip_tokens
from knowledge.types import Chunk

GB = 1e9 / 2**30  # "GB" is decimal; the profile stores GiB

_SHEET = """# Orrin Q3 coprocessor: brief

## Key figures

The Orrin Q3 is a fictional coprocessor.

**Device memory** — 40 GB of LPDDR6

**Memory bandwidth** — 1.2 TB/s

**Core clock:** 1,350 MHz
"""


def _markdown_chunks(tmp_path: Path, text: str) -> list[Chunk]:
    path = tmp_path / "orrin-q3-brief.md"
    path.write_text(text)
    doc = load_document(path)
    return chunk_sections(doc.sections, "orrin_q3", title=doc.title, metadata={})


def test_a_bold_label_paragraph_is_kept_as_a_label_value_item():
    """The loader keeps ``**Label** — value`` as a list item; a bold phrase inside a sentence stays prose."""
    texts = [s.text for s in markdown_sections(
        "**Spool buffer** — 80 KiB\n\n**Note** that the spool is flushed per frame.\n", "x.md")]
    assert texts == ["- Spool buffer — 80 KiB", "Note that the spool is flushed per frame."]


def test_a_dash_separated_list_item_is_read_like_a_table_cell():
    """``- Spool buffer – 80 KiB`` (en dash) is a record whose key is the label and whose value is the figure,
    quoted verbatim from the label on; it leaves the prose."""
    chunk = Chunk(id="a" * 32, text="", chip="orrin_q3", source="n.md", kind="prose")
    records, prose = list_item_records("Figures follow. - Spool buffer – 80 KiB", chunk, chip_tokens("orrin_q3"))
    assert [(r.key, r.text, r.quote, r.is_table) for r in records] == [
        ("Spool buffer", "80 KiB", "Spool buffer – 80 KiB", True)]
    assert prose.strip() == "Figures follow."


def test_bold_label_paragraphs_give_the_profile_their_figures(tmp_path):
    """40 GB -> 40e9 / 2**30 GiB; 1.2 TB/s -> 1200 GB/s; ``**Core clock:** 1,350 MHz`` -> 1350 MHz."""
    profile = extract_profile("orrin_q3", _markdown_chunks(tmp_path, _SHEET))
    assert abs(profile.mem_capacity_gb.value - 40 * GB) < 1e-6
    assert profile.mem_bw_gbps.value == 1200
    assert profile.clock_mhz.value == 1350
    assert profile.mem_bw_gbps.source.quote == "Memory bandwidth — 1.2 TB/s"

