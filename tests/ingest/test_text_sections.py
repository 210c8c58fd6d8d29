"""Plain-text manuals: numbered section headings as a hierarchy and ``label: value`` spec lines under them
(fictional Brennan OF3 manual; every expected value by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_scope import scope_heading

_MANUAL = """BRENNAN OF3 -- DEVELOPER NOTES
Part 2 of the Brennan OF3 developer notes.

2 Hardware limits
=================

The OF3 is a fictional inference processor. Its compute unit is the tensor
core: a thread group (the OF3's work-group) is always scheduled onto one
tensor core.

2.1 Per device

      Tensor cores:             24
      Core clock (nominal):     1,250 MHz
      Core clock (turbo):       1,600 MHz
      L2 cache:                 12 MiB
      Device memory:            32 GiB

2.2 Per tensor core

      Lane groups:              2
      Local scratchpad:         96 KiB
      Register file:            128 KiB

2.2.1 Per lane group

      Register file:            64 KiB
      Lanes:                    16

2.3 Per thread group

      Threads:                  up to 512
      Local scratchpad:         up to 48 KiB

3 Installation

Installation notes:
Copy the firmware before the first boot. The loader reads it once.
"""


def _document(tmp_path: Path):
    path = tmp_path / "of3-notes.txt"
    path.write_text(_MANUAL)
    return load_document(path)


def test_numbered_headings_nest_by_the_depth_of_their_number(tmp_path):
    doc = _document(tmp_path)
    paths = {s.text: s.heading_path for s in doc.sections}
    assert paths["- Tensor cores: 24"] == ("2 Hardware limits", "2.1 Per device")
    assert paths["- Lanes: 16"] == ("2 Hardware limits", "2.2 Per tensor core", "2.2.1 Per lane group")
    assert paths["- Threads: up to 512"] == ("2 Hardware limits", "2.3 Per thread group")


def test_label_value_lines_become_items_and_prose_stays_whole(tmp_path):
    doc = _document(tmp_path)
    texts = [s.text for s in doc.sections]
    assert "- Core clock (turbo): 1,600 MHz" in texts
    assert any(t.startswith("The OF3 is a fictional inference processor. Its compute unit is the tensor core:")
               for t in texts)  # a sentence with a colon is not a label/value line
    assert any("Copy the firmware before the first boot. The loader reads it once." in t for t in texts)
    assert not any(t.startswith("- Copy") for t in texts)


def test_a_numbered_scope_heading_scopes_the_lines_under_it():
    assert scope_heading("Notes > 2.2.1 Per lane group") == "Per lane group"
    assert scope_heading("Notes > 4.3 Peak throughput (per chip)") == "per chip"
    assert scope_heading("Notes > 2.2 Memory") == ""


def test_figures_are_read_at_the_level_of_their_heading(tmp_path):
    """24 cores; 12 MiB L2; 32 GiB; scratchpad 96 KiB per core and 48 KiB per group; 512 threads per group;
    the register file per core is 128 KiB = 32,768 registers (the 64 KiB per lane group is not the core's); the
    nominal clock 1,250 MHz, not the turbo clock."""
    doc = _document(tmp_path)
    chunks = chunk_sections(doc.sections, "brennan_of3", title=doc.title, metadata={})
    profile, _ = extract_profile_with_report("brennan_of3", chunks)
    assert profile.num_compute_units.value == 24
    assert profile.l2_cache_mb.value == 12
    assert profile.mem_capacity_gb.value == 32
    assert profile.smem_per_compute_unit_kb.value == 96
    assert profile.smem_per_block_kb.value == 48
    assert profile.max_threads_per_block.value == 512
    assert profile.registers_per_compute_unit.value == 128 * 1024 / 4
    assert profile.clock_mhz.value == 1250 and profile.clock_mhz.kind == "stated"


def test_asciidoc_markup_in_a_txt_file_is_read_as_asciidoc(tmp_path):
    """A manual exported from AsciiDoc as .txt: its ``|===`` table becomes table rows with their header."""
    from ingest.loaders import load_document

    text = ("= Orrin V3 Hardware Manual\n:revnumber: 1.2\n:doctype: book\n\n== Limits\n\n"
            ".Per-slice limits\n[options=\"header\"]\n|===\n|Item |Value\n|Slices |56\n|Lane group width |16\n|===\n")
    path = tmp_path / "orrin_manual.txt"
    path.write_text(text, encoding="utf-8")
    doc = load_document(path)
    rows = [s for s in doc.sections if s.kind == "table_row"]
    assert doc.title == "Orrin V3 Hardware Manual" and len(rows) == 2
    assert "Slices" in rows[0].text and "56" in rows[0].text and "Item" in rows[0].text
    assert all(":revnumber:" not in s.text for s in doc.sections)
