"""A correction item in a document ("Table 3 lists 96 KiB ...; the correct value is 64 KiB") wins over the table
value it corrects, quoted, with no conflict (fictional Quern Q6 reference, no errata section; every expected value
written by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_supersede import is_correcting_figure, is_old_figure

_QUERN = """# Quern Q6 vector processor: technical reference

## 1. Summary

The Quern Q6 has 24 vector engines (its compute units).

## 3. Memory

Table 3: On-chip memory

| Memory | Per vector engine |
|---|---|
| Scratch (shared memory) | 96 KiB |

| Memory | Chip |
|---|---|
| L2 cache | 8 MiB |

## 4. Clocks and throughput

| Item | Q6 |
|---|---|
| Engine clock | 1,900 MHz |
| FP16 matrix peak | 310 TFLOPS |
| FP32 vector peak | 18.2 TFLOPS |

## 9. Notes

- Scratch: Table 3 lists 96 KiB of scratch per vector engine; the correct value is 64 KiB.
- The engine clock of 1,900 MHz given in section 4 is a typo; it should read 1,750 MHz.
- Table 4 lists 310 TFLOPS for FP16 matrix operations; the correct figure is 290 TFLOPS.
- The L2 cache size of 8 MiB in Table 3 is correct.
"""


@pytest.mark.parametrize("text", ["the correct value is 64 KiB", "it should read 1,750 MHz",
                                  "the clock is corrected to 1,750 MHz", "the actual figure is 290 TFLOPS"])
def test_a_figure_given_as_the_correct_value_is_a_correcting_figure(text):
    assert is_correcting_figure(text, next(i for i, ch in enumerate(text) if ch.isdigit()))


def test_a_figure_said_to_be_wrong_is_an_old_figure():
    text = "The engine clock of 1,900 MHz given in section 4 is a typo"
    assert is_old_figure(text, text.index("1,900"), text.index("1,900") + len("1,900 MHz"))
    text = "The L2 cache size of 8 MiB in Table 3 is correct."
    assert not is_old_figure(text, text.index("8 MiB"), text.index("8 MiB") + 5)


def test_corrections_supersede_the_values_they_name_as_wrong(tmp_path):
    """Shared memory per engine 64 KiB (not 96), clock 1750 MHz (not 1900), FP16 290 TFLOPS (not 310); each quoted
    from its correction, none a conflict; the uncorrected L2 (8 MiB), FP32 (18.2) and 24 engines stay."""
    path = tmp_path / "quern-q6.md"
    path.write_text(_QUERN)
    doc = load_document(path)
    profile, report = extract_profile_with_report("quern_q6", chunk_sections(doc.sections, "quern_q6",
                                                                             title=doc.title))
    assert profile.smem_per_compute_unit_kb.value == 64 and profile.smem_per_compute_unit_kb.kind == "stated"
    assert "the correct value is 64 KiB" in profile.smem_per_compute_unit_kb.source.quote
    assert profile.clock_mhz.value == 1750 and profile.clock_mhz.kind == "stated"
    assert "should read 1,750 MHz" in profile.clock_mhz.source.quote
    assert profile.peak_tflops["fp16"].value == 290 and profile.peak_tflops["fp16"].kind == "stated"
    assert profile.peak_tflops["fp32"].value == 18.2
    assert profile.l2_cache_mb.value == 8
    assert profile.num_compute_units.value == 24
    assert len(report.superseded) == 3
    assert any("96" in note and "64" in note for note in report.superseded)


def test_a_recommendation_with_no_old_figure_is_an_ordinary_statement(tmp_path):
    """"The engine clock should be 1,750 MHz" corrects nothing: 1750 MHz is read as the sentence states it."""
    text = ("# Quern Q6 notes\n\nThe Quern Q6 has 24 vector engines (its compute units). The engine clock should be "
            "1,750 MHz.\n")
    path = tmp_path / "quern-q6-notes.md"
    path.write_text(text)
    doc = load_document(path)
    profile, report = extract_profile_with_report("quern_q6", chunk_sections(doc.sections, "quern_q6",
                                                                             title=doc.title))
    assert profile.num_compute_units.value == 24
    assert profile.clock_mhz.value == 1750
    assert report.superseded == []
