"""A document written with decimal commas (fictional Brisa N3 data sheet, de-DE number style) is read with its own
convention; English thousands separators stay as they are (every expected value written by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.decimal_marks import original_span, to_point_decimals, uses_decimal_comma
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_BRISA = """# Brisa N3 accelerator - data sheet

The Brisa N3 is built from 2.048 compute cores (its compute units), grouped in 32 clusters. Each compute core
has 48 KiB of shared memory. Firmware 5.0 and section 4.2.1 of the manual are cited as written.

| Parameter | Brisa N3 |
|---|---|
| Compute cores | 2.048 |
| Core clock | 1,8 GHz |
| Memory bandwidth (peak) | 3,2 TB/s |
| Device memory | 64 GB |
| L2 cache | 24 MB |
| FP16 matrix peak | 412,5 TFLOPS |
| FP32 vector peak | 51,6 TFLOPS |
"""

_CORRIE = """# Corrie K2 data sheet

| Property | Corrie K2 |
|---|---|
| Compute units | 1,024 |
| Engine clock | 1,800 MHz |
| Memory bandwidth | 2,039 GB/s |
| L2 cache | 1,024 KB |
| FP32 vector peak | 19.5 TFLOPS |
"""


def test_a_document_whose_figures_can_only_be_read_with_decimal_commas_uses_them():
    assert uses_decimal_comma(["Core clock 1,8 GHz", "Memory bandwidth 3,2 TB/s"])
    assert uses_decimal_comma(["1.234,5 GB/s"])


@pytest.mark.parametrize("texts", [
    ["Compute units 1,024", "L2 cache 1,024 KB", "Memory bandwidth 2,039 GB/s"],  # ambiguous: three digits
    ["Core clock 1,8 GHz", "FP32 19.5 TFLOPS"],  # both conventions: left as written
    ["Firmware 1,8 of the tool chain"],  # no unit after it: not a figure
])
def test_english_ambiguous_or_mixed_documents_are_left_as_written(texts):
    assert not uses_decimal_comma(texts)


def test_marks_are_swapped_only_in_numbers_of_the_convention_and_the_length_is_kept():
    text = "2.048 cores at 1,8 GHz; 1.234,5 GB/s; firmware 5.0, section 4.2.1, date 02.12.2026."
    converted = to_point_decimals(text)
    assert converted == "2,048 cores at 1.8 GHz; 1,234.5 GB/s; firmware 5.0, section 4.2.1, date 02.12.2026."
    assert len(converted) == len(text)
    assert original_span("1.8 GHz", converted, text) == "1,8 GHz"


def _profile(tmp_path, name: str, text: str, chip: str):
    path = tmp_path / name
    path.write_text(text)
    doc = load_document(path)
    profile, _ = extract_profile_with_report(chip, chunk_sections(doc.sections, chip, title=doc.title))
    return profile


def test_a_decimal_comma_data_sheet_gives_its_figures_quoted_as_written(tmp_path):
    """2.048 = 2048 cores; 1,8 GHz = 1800 MHz; 3,2 TB/s = 3200 GB/s; 412,5 and 51,6 TFLOPS; 64 GB = 64e9 / 2**30
    GiB; 24 MB L2; 48 KiB per core."""
    profile = _profile(tmp_path, "brisa-n3.md", _BRISA, "brisa_n3")
    assert profile.num_compute_units.value == 2048
    assert profile.clock_mhz.value == 1800
    assert profile.mem_bw_gbps.value == 3200
    assert profile.mem_capacity_gb.value == pytest.approx(64e9 / 2**30)
    assert profile.l2_cache_mb.value == 24
    assert profile.smem_per_compute_unit_kb.value == 48
    assert profile.peak_tflops["fp16"].value == 412.5
    assert profile.peak_tflops["fp32"].value == 51.6
    assert "1,8 GHz" in profile.clock_mhz.source.quote
    assert "3,2 TB/s" in profile.mem_bw_gbps.source.quote
    assert "2.048" in profile.num_compute_units.source.quote


def test_an_english_data_sheet_keeps_its_thousands_separators(tmp_path):
    """1,024 units; 1,800 MHz; 2,039 GB/s; 1,024 KB = 1 MiB; 19.5 TFLOPS."""
    profile = _profile(tmp_path, "corrie-k2.md", _CORRIE, "corrie_k2")
    assert profile.num_compute_units.value == 1024
    assert profile.clock_mhz.value == 1800
    assert profile.mem_bw_gbps.value == 2039
    assert profile.l2_cache_mb.value == 1
    assert profile.peak_tflops["fp32"].value == 19.5
