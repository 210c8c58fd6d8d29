"""Nested bullet hierarchies: figures stated at the level of the list item that scopes them (fictional Quenby Q2
documents; every expected value by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.markdown import markdown_sections
from ingest.profile_extract import extract_profile_with_report
from knowledge.types import Chunk

GB = 1e9 / 2**30

_OUTLINE = """# Quenby Q2 outline

The Q2 is a fictional inference chip. The forge is the compute unit of the Q2: a strand bundle (the Q2's
thread block) runs on one forge. Across its mesh the Quenby Q2 therefore has 11.25 MiB of forge SRAM.

- Q2 chip
  - Quadrants: 4
  - Device memory: 48 GB
  - *Each quadrant*
    - Forges: 15
    - Memory bandwidth per quadrant: 0.5 TB/s
    - Every forge
      - Forge SRAM: 192 KiB
"""


def _chunks(tmp_path: Path) -> list[Chunk]:
    path = tmp_path / "quenby-q2-outline.md"
    path.write_text(_OUTLINE)
    doc = load_document(path)
    return chunk_sections(doc.sections, "quenby_q2", title=doc.title, metadata={})


def test_a_scope_item_joins_the_heading_path_of_the_items_under_it():
    sections = markdown_sections(_OUTLINE, "q.md")
    paths = {s.text: s.heading_path for s in sections}
    assert paths["- Quadrants: 4"] == ("Quenby Q2 outline",)
    assert paths["- Forges: 15"] == ("Quenby Q2 outline", "Each quadrant")
    assert paths["- Forge SRAM: 192 KiB"] == ("Quenby Q2 outline", "Each quadrant", "Every forge")


def test_counts_per_level_multiply_to_the_chip_and_per_level_figures_keep_their_scope(tmp_path):
    """4 quadrants x 15 forges = 60 forges (derived, not the per-quadrant 15); 192 KiB per forge; the 0.5 TB/s is
    per quadrant, not the chip's; 48 GB stays the chip's; the chip's 11.25 MiB of SRAM in all is no forge's."""
    profile, _ = extract_profile_with_report("quenby_q2", _chunks(tmp_path))
    assert (profile.num_compute_units.kind, profile.num_compute_units.value) == ("derived", 60)
    assert "4 quadrant x 15 forge" in profile.num_compute_units.formula
    assert (profile.smem_per_compute_unit_kb.kind, profile.smem_per_compute_unit_kb.value) == ("stated", 192)
    assert profile.mem_bw_gbps.value is None
    assert abs(profile.mem_capacity_gb.value - 48 * GB) < 1e-6
