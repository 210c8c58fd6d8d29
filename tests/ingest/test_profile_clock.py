"""The chip's clock when a document gives several: sustained over boost/burst or capped; boost over base (fictional
Garnet G4, Harlow H2 and Ivel I3 datasheets; every expected value by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_SUSTAINED = """# Garnet G4 datasheet

The Garnet G4 is a fictional training accelerator.

| Parameter | Value |
|---|---|
| Shader engines | 64 |
| Engine clock, turbo (thermal headroom only) | 2.4 GHz |
| Engine clock, all-core sustained | 1.95 GHz |
| HBM capacity | 80 GB |
"""

_BASE_AND_BOOST = """# Harlow H2 datasheet

The Harlow H2 is a fictional inference card.

- Base clock: 1,100 MHz
- Boost clock: 1,700 MHz
- Device memory: 24 GB
"""


def _profile(tmp_path: Path, name: str, text: str, chip: str):
    path = tmp_path / name
    path.write_text(text)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, chip, title=doc.title, metadata={})
    return extract_profile_with_report(chip, chunks)[0]


def test_a_sustained_clock_wins_over_a_turbo_clock(tmp_path):
    profile = _profile(tmp_path, "garnet-g4.md", _SUSTAINED, "garnet_g4")
    assert profile.clock_mhz.value == 1950 and profile.clock_mhz.kind == "stated"
    assert "sustained" in profile.clock_mhz.source.locator


def test_without_a_sustained_clock_the_boost_clock_stays_the_clock(tmp_path):
    profile = _profile(tmp_path, "harlow-h2.md", _BASE_AND_BOOST, "harlow_h2")
    assert profile.clock_mhz.value == 1700


_CAPPED = """# Ivel I3 product brief

The Ivel I3 is a fictional edge accelerator.

| Parameter | Value |
|---|---|
| Core clock (sustained) | 900 MHz |

On battery power the core clock is capped at 600 MHz.
"""


def test_a_capped_clock_is_not_the_sustained_clock(tmp_path):
    profile = _profile(tmp_path, "ivel-i3.md", _CAPPED, "ivel_i3")
    assert profile.clock_mhz.value == 900 and profile.clock_mhz.kind == "stated"


def test_the_clock_the_peaks_are_at_is_the_sustained_one(tmp_path):
    text = """# Nene N1 notes

- Array clock: 1,400 MHz (all peak figures below are at this clock)
- Turbo clock: up to 1,750 MHz
"""
    profile = _profile(tmp_path, "nene-n1.md", text, "nene_n1")
    assert profile.clock_mhz.value == 1400 and profile.clock_mhz.kind == "stated"


_PEAKS_AT_BASE = """# Tollan T3 accelerator notes

| Parameter | Tollan T3 |
|---|---|
| Base clock | 1,350 MHz |
| Boost clock (up to) | 1,900 MHz |
| FP32 vector peak | 20.7 TFLOPS |

All peak rates in this note are computed at the base clock; the boost clock is an opportunistic maximum.
"""


def test_the_clock_the_peaks_are_computed_at_is_the_chips_clock(tmp_path):
    """"computed at the base clock": 1,350 MHz (the base clock row), not the 1,900 MHz boost; no conflict."""
    from ingest.profile_clock import peak_clock_words

    assert peak_clock_words(["All peak rates in this note are computed at the base clock."]) == {"base"}
    path = tmp_path / "tollan-t3.md"
    path.write_text(_PEAKS_AT_BASE)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("tollan_t3", chunk_sections(doc.sections, "tollan_t3", title=doc.title))
    assert profile.clock_mhz.value == 1350 and profile.clock_mhz.kind == "stated"
