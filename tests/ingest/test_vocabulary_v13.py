"""Statements in new fictional vocabulary read from Markdown through the onboarding loaders, chunker and
extractor: a list's last statement does not run on into a predecessor's paragraph."""

from __future__ import annotations

from pathlib import Path

from ingest.profile_extract import extract_profile_with_report
from ingest.profile_sources import document_chunks


def _profile(tmp_path: Path, text: str, chip: str = "quill_q7"):
    doc = tmp_path / "sheet.md"
    doc.write_text(text, encoding="utf-8")
    chunks, _ = document_chunks(chip, [doc])
    return extract_profile_with_report(chip, chunks)[0]


def test_last_list_item_does_not_run_into_the_predecessor_paragraph(tmp_path):
    profile = _profile(tmp_path, """# Quill Q7 brief

## Throughput

- Lattice slices: 40
- Dense BF16 (lattice): 610 TFLOPS

The earlier Quill Q5 had 28 lattice slices and 12 MB of staging cache.
""")
    assert profile.peak_tflops["bf16"].value == 610.0
    assert profile.peak_tflops["bf16"].source.quote.endswith("610 TFLOPS")


_LINEUP = """# Pine P3 brief

| Model | Lattice slices | Clock |
|---|---|---|
| P2 | 16 | 1.5 GHz |
| P3 | 32 | 1.9 GHz |
"""


def test_a_bare_clock_column_is_the_chips_clock(tmp_path):
    profile = _profile(tmp_path, _LINEUP, chip="pine_p3")
    assert profile.clock_mhz.value == 1900.0
    assert profile.clock_mhz.kind == "stated"


def test_a_bare_clock_gives_way_to_a_named_engine_clock(tmp_path):
    profile = _profile(tmp_path, _LINEUP + "\nThe P3's lattice clock boosts to 2.1 GHz (maximum engine clock).\n",
                       chip="pine_p3")
    assert profile.clock_mhz.value == 2100.0
    assert profile.clock_mhz.kind == "stated"


def test_a_bare_clock_under_a_memory_row_is_not_the_chips(tmp_path):
    profile = _profile(tmp_path, """# Pine P3 brief

| Part | Clock |
|---|---|
| Staging memory | 3.2 GHz |
""", chip="pine_p3")
    assert profile.clock_mhz.value is None


def test_a_clock_named_after_its_value_in_prose_is_not_bare(tmp_path):
    profile = _profile(tmp_path, """# Pine P3 brief

The housekeeping controller runs on its own 600 MHz clock.

- Frequency: 1.7 GHz
""", chip="pine_p3")
    assert profile.clock_mhz.value == 1700.0


_ROLE = """# Sorrel S4 overview

## Processing

The shader hive is the unit to which the runtime hands thread blocks.

- Hives: 36
- Hive scratch: 128 KB per hive
"""


def test_a_compute_unit_defined_by_its_role(tmp_path):
    profile = _profile(tmp_path, _ROLE, chip="sorrel_s4")
    assert profile.compute_unit_name == "shader hive"
    assert profile.num_compute_units.value == 36


def test_a_part_of_the_unit_that_runs_its_waves_is_not_the_unit(tmp_path):
    profile = _profile(tmp_path, """# Sorrel S4 overview

The vector lane is one of the four pipelines of a hive, which runs the thread blocks' waves.

- Vector lanes: 144
""", chip="sorrel_s4")
    assert profile.compute_unit_name != "vector lane"
    assert profile.num_compute_units.value is None
