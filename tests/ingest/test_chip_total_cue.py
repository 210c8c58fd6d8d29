"""A figure stated for all of the chip's compute units is a chip total, not one unit's value (fictional Lathe L2
table; expected values by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_text import level_cues

_LATHE = """# Lathe L2 data sheet

The Lathe L2 has 16 compute units.

| Parameter | Lathe L2 |
|---|---|
| Scratch SRAM (shared memory), per compute unit | 256 KiB |
| Scratch SRAM (shared memory), all compute units | 4 MiB |
"""


def test_all_compute_units_is_a_chip_level_cue():
    assert "chip" in level_cues("On-core SRAM, all compute units")
    assert "chip" not in level_cues("On-core SRAM, per compute unit")


def test_the_sum_over_all_units_is_not_read_as_one_units_shared_memory(tmp_path):
    """256 KiB per compute unit (16 x 256 KiB = 4 MiB is the chip's total): no conflict with the 4 MiB row."""
    path = tmp_path / "lathe-l2.md"
    path.write_text(_LATHE)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("lathe_l2", chunk_sections(doc.sections, "lathe_l2", title=doc.title))
    assert profile.smem_per_compute_unit_kb.value == 256 and profile.smem_per_compute_unit_kb.kind == "stated"
