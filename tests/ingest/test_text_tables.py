"""Fixed-width tables in plain-text files (fictional Pellucid PX-3 release notes; values by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.pdf_tables import cells_of
from ingest.profile_extract import extract_profile_with_report

_README = """PELLUCID PX SERIES - RELEASE NOTES
==================================

The PX-3 is the part these notes are about. The PX-1 is listed for reference.

PARTS

  Property                   PX-1        PX-3
  -------------------------  ----------  ----------
  Device memory              8 GB        16 GB
  Tiles per chip             6           9
  Memory bandwidth           0.4 TB/s    0.8 TB/s

Drivers before 2.1 report the PX-3 as a PX-1.
"""


def test_a_one_character_cell_is_its_own_cell():
    """"9" and "6" are cells of their own, not joined across the gap to the next one."""
    assert cells_of("  Tiles per chip             6           9") == [(2, "Tiles per chip"), (29, "6"), (41, "9")]


def test_a_fixed_width_table_becomes_rows_with_their_headers(tmp_path):
    path = tmp_path / "px-notes.txt"
    path.write_text(_README)
    doc = load_document(path)
    rows = [s.text for s in doc.sections if s.kind == "table_row"]
    assert rows == ["Property: Device memory | PX-1: 8 GB | PX-3: 16 GB",
                    "Property: Tiles per chip | PX-1: 6 | PX-3: 9",
                    "Property: Memory bandwidth | PX-1: 0.4 TB/s | PX-3: 0.8 TB/s"]
    prose = " ".join(s.text for s in doc.sections if s.kind != "table_row")
    assert "16 GB" not in prose and "----" not in prose and "Drivers before 2.1" in prose
    assert any(s.heading_path[-1:] == ("PARTS",) for s in doc.sections if s.kind == "table_row")


def test_the_chip_column_of_a_fixed_width_table_gives_its_profile(tmp_path):
    """PX-3's column: 16 GB (16e9 B = 14.901 GiB), 800 GB/s; the PX-1's 8 GB and 400 GB/s are not taken."""
    path = tmp_path / "px-notes.txt"
    path.write_text(_README)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, "pellucid_px3", title=doc.title, metadata={})
    profile, _ = extract_profile_with_report("pellucid_px3", chunks, product="PX-3")
    assert abs(profile.mem_capacity_gb.value - 16e9 / 2**30) < 1e-6
    assert profile.mem_bw_gbps.value == 800
