"""reStructuredText field lists keep their names: ``:Device memory: 24 GB`` is a label/value item (fictional Sedge S3
reference; every expected value by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_RST = """=======================
Sedge S3 Reference Card
=======================

:Version: 4
:Product: Sedge S3

Limits
======

The S3 is a fictional vision accelerator; its compute unit is the compute unit (CU).

:Compute units: 18
:Device memory: 24 GiB of LPDDR5
:Memory bandwidth: 204.8 GB/s
:Engine clock: 1,100 MHz (every peak figure on this card is at this clock)
:Boost clock: up to 1,300 MHz (single-CU loads only)
"""


def _document(tmp_path: Path):
    path = tmp_path / "s3-card.rst"
    path.write_text(_RST)
    return load_document(path)


def test_a_field_list_item_keeps_its_name(tmp_path):
    texts = [s.text for s in _document(tmp_path).sections]
    assert "- Device memory: 24 GiB of LPDDR5" in texts
    assert "- Version: 4" in texts and "- Product: Sedge S3" in texts  # the docinfo fields too


def test_field_list_figures_give_the_profile(tmp_path):
    """18 CUs, 24 GiB, 204.8 GB/s; the 1,100 MHz clock that the peaks are at, not the 1,300 MHz boost."""
    doc = _document(tmp_path)
    chunks = chunk_sections(doc.sections, "sedge_s3", title=doc.title, metadata={})
    profile, _ = extract_profile_with_report("sedge_s3", chunks)
    assert profile.num_compute_units.value == 18
    assert profile.mem_capacity_gb.value == 24
    assert profile.mem_bw_gbps.value == 204.8
    assert profile.clock_mhz.value == 1100 and profile.clock_mhz.kind == "stated"
