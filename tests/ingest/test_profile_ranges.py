"""A range's ends are not a product's value (fictional Ysolde Y4 family sheet; values by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_SHEET = """# Ysolde Y4 accelerator family

- Device memory: 16–32 GB, by configuration
- Memory bandwidth: 600 to 900 GB/s across the family

The Ysolde Y4 itself has 24 GB of device memory.
"""


def test_range_ends_are_left_out_and_the_single_value_is_stated(tmp_path):
    """16 and 32 GB (range ends) leave no conflict with the Y4's 24 GB; 600 and 900 GB/s give no bandwidth."""
    path = tmp_path / "ysolde-family.md"
    path.write_text(_SHEET)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, "ysolde_y4", title=doc.title, metadata={})
    profile, report = extract_profile_with_report("ysolde_y4", chunks)
    assert profile.mem_capacity_gb.kind == "stated"
    assert abs(profile.mem_capacity_gb.value - 24e9 / 2**30) < 1e-6
    assert profile.mem_bw_gbps.value is None and "mem_capacity_gb" not in report.conflicts
