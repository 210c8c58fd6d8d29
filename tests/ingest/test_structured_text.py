"""Key/value structures outside tables: INI-style configuration text and HTML definition lists (fictional chips,
values by hand), and headings that name another product."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.ini import looks_like_ini
from ingest.profile_extract import extract_profile_with_report

GIB = 2**30

_CONFIG = """; lumora-q3.cfg - board configuration for the Lumora Q3 inference card
; read by the qdrv driver at probe time

[board]
model = "Lumora Q3"
tdp_watts = 120

[memory]
dram_gb = 24            ; LPDDR5X, on package
dram_bandwidth = 410 GB/s

[engine_clocks]
nominal_mhz = 1300

[throughput]
# dense rates at nominal_mhz
fp16_tflops = 96.5
"""

_MANUAL = """Lumora Q3 operating notes

Memory: 24 GB on package
Clock: 1300 MHz nominal
Bandwidth: 410 GB/s
"""


def _profile(tmp_path: Path, name: str, text: str, chip: str):
    path = tmp_path / name
    path.write_text(text)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, chip, title=doc.title, metadata={})
    return doc, extract_profile_with_report(chip, chunks)[0]


def test_ini_text_is_recognised_and_label_lines_are_not():
    assert looks_like_ini(_CONFIG)
    assert not looks_like_ini(_MANUAL)  # "key: value" lines of a manual: no section, no "="
    assert not looks_like_ini("[1] Smith, 2024.\n[2] Jones, 2025.\nSee the references above.\n")


def test_an_ini_section_gives_items_with_the_unit_in_their_key(tmp_path):
    """dram_gb = 24 -> 24 GB (24e9 B, decimal GB, stored in GiB); dram_bandwidth = 410 GB/s (a unit in the value);
    nominal_mhz = 1300 -> 1300 MHz; the comment after a value stays with it, the file's comments are prose."""
    doc, profile = _profile(tmp_path, "lumora-q3.cfg.txt", _CONFIG, "lumora_q3")
    memory = [s for s in doc.sections if s.heading_path == ("memory",)]
    assert memory and memory[0].text.splitlines() == ["- dram gb: 24 (LPDDR5X, on package)",
                                                      "- dram bandwidth: 410 GB/s"]
    assert "read by the qdrv driver" in doc.sections[0].text
    assert abs(profile.mem_capacity_gb.value - 24e9 / GIB) < 1e-9
    assert profile.mem_bw_gbps.value == 410
    assert profile.clock_mhz.value == 1300
    assert profile.peak_tflops["fp16"].value == 96.5  # the comment before the items ends as a sentence


_SPEC_PAGE = """<html><head><title>Corlis T6 technical data</title></head><body>
<h1>Corlis T6 technical data</h1>
<h2>Memory</h2>
<dl>
  <dt>Device memory</dt><dd>48 GB GDDR7</dd>
  <dt>Memory bandwidth</dt><dd>1.2 TB/s</dd>
</dl>
<h2>Upgrading from the Corlis T4</h2>
<p>T4 values, for reference:</p>
<dl>
  <dt>Device memory</dt><dd>32 GB GDDR6</dd>
  <dt>Memory bandwidth</dt><dd>0.9 TB/s</dd>
</dl>
</body></html>
"""


def test_definition_list_entries_stay_items_and_a_heading_naming_another_product_scopes_them(tmp_path):
    """Each <dt>/<dd> pair is one item even after the chunker joins the section's prose; the T4's list (its
    heading names only the T4) gives no candidate, so the T6's 48 GB and 1.2 TB/s are stated without conflict."""
    doc, profile = _profile(tmp_path, "corlis-t6.html", _SPEC_PAGE, "corlis_t6")
    items = [s.text for s in doc.sections if s.heading_path[-1:] == ("Memory",)]
    assert items == ["- Device memory: 48 GB GDDR7", "- Memory bandwidth: 1.2 TB/s"]
    assert (profile.mem_capacity_gb.kind, round(profile.mem_capacity_gb.value * GIB)) == ("stated", 48 * 10**9)
    assert (profile.mem_bw_gbps.kind, profile.mem_bw_gbps.value) == ("stated", 1200)
