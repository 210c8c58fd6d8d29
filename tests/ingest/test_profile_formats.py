"""Format-level profile extraction: figures stated relative to another, counts inside one sub-unit, and tables
with one product per row (fictional Talon T7 documents; every expected value computed by hand)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ingest.profile_extract import extract_profile
from knowledge.types import Chunk

GB = 1e9 / 2**30  # "GB" is decimal; the profile stores GiB


def _chunk(text: str) -> Chunk:
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return Chunk(id=digest, text=text, chip="talon_t7", source="talon-t7-notes.md", kind="prose")


def _markdown_chunks(tmp_path: Path, text: str) -> list[Chunk]:
    from ingest.chunker import chunk_sections
    from ingest.loaders import load_document

    path = tmp_path / "talon-lineup.md"
    path.write_text(text)
    doc = load_document(path)
    return chunk_sections(doc.sections, "talon_t7", title=doc.title, metadata={})


def test_a_figure_stated_as_a_multiple_of_the_previous_one_is_multiplied_out():
    """"half that in TF32" after 300 TFLOPS of FP16 is 150 TFLOPS of TF32 (derived), never 300."""
    profile = extract_profile("talon_t7", [_chunk(
        "The Talon T7 sustains 300 TFLOPS of dense FP16 matrix throughput, half that in TF32, and 40 TFLOPS of "
        "FP64 on its vector pipes.")])
    assert profile.peak_tflops["fp16"].value == 300
    tf32 = profile.peak_tflops["tf32"]
    assert (tf32.value, tf32.kind) == (150, "derived")
    assert "half that" in tf32.source.quote and "300 TFLOPS" in tf32.source.quote
    assert profile.peak_tflops["fp64"].value == 40


def test_a_relative_figure_without_a_data_type_gives_nothing():
    profile = extract_profile("talon_t7", [_chunk("The Talon T7 sustains 300 TFLOPS of dense FP16 matrix throughput, "
                                                  "and its successor will offer 3 times that.")])
    assert {k: v.value for k, v in profile.peak_tflops.items()} == {"fp16": 300}


def test_a_count_inside_one_sub_unit_is_not_the_chip_count():
    """"A pod pairs 4 compute units": 4 is per pod, never the chip's count."""
    profile = extract_profile("talon_t7", [_chunk(
        "A pod pairs 4 compute units (CUs) that share one scratch memory. The L2 cache is 24 MB.")])
    assert profile.num_compute_units.value is None
    assert profile.get("l2_cache_mb") == 24


def test_a_sub_unit_that_pairs_compute_units_gives_the_chip_count_as_derived():
    """40 pods on the chip x 4 compute units per pod = 160 (derived, with its formula)."""
    profile = extract_profile("talon_t7", [_chunk(
        "The Talon T7 is built from 40 pods. A pod pairs 4 compute units (CUs) that share one scratch memory.")])
    field = profile.num_compute_units
    assert (field.value, field.kind) == (160, "derived")
    assert "40" in field.formula and "4" in field.formula


LINEUP_MD = """# Talon lineup

## Products

| Product | Form factor | Compute units | Memory capacity (GB) | Memory bandwidth (GB/s) | FP16 dense (TFLOPS) |
|---|---|---|---|---|---|
| Talon T5 | card | 64 | 24 | 900 | 150 |
| Talon T7 Twin | dual board | 320 | 192 | 6,400 | 1,000 |
| Talon T7 | module | 160 | 96 | 3,200 | 500 |
| Talon T7 Lite | module | 120 | 64 | 2,400 | 375 |
"""


def test_the_exact_product_row_wins_over_rows_whose_names_contain_it(tmp_path):
    profile = extract_profile("talon_t7", _markdown_chunks(tmp_path, LINEUP_MD))
    assert profile.get("num_compute_units") == 160
    assert profile.get("mem_capacity_gb") == pytest.approx(96 * GB)
    assert profile.get("mem_bw_gbps") == pytest.approx(3200)
    assert profile.peak_tflops["fp16"].value == 500
    assert "Talon T7 Twin" not in (profile.mem_bw_gbps.source.locator or "")


def test_without_an_exact_row_the_shortest_name_containing_the_chip_wins(tmp_path):
    text = LINEUP_MD.replace("| Talon T7 | module | 160 | 96 | 3,200 | 500 |\n", "").replace("Talon T7 Lite", "T7 Lite") \
        .replace("Talon T7 Twin", "Talon T7 Twin OAM")
    profile = extract_profile("talon_t7", _markdown_chunks(tmp_path, text))
    assert (profile.get("num_compute_units"), profile.get("mem_bw_gbps")) == (120, pytest.approx(2400))
    assert profile.peak_tflops["fp16"].value == 375


def test_a_count_in_a_comparison_with_another_product_is_not_the_chips():
    """The T5's 24 pods in "Compared with the older Talon T5 (24 pods), ..." never make 24 x 4 = 96 the T7's."""
    profile = extract_profile("talon_t7", [_chunk(
        "Compared with the older Talon T5 (24 pods, 32 GB), the Talon T7 doubles the pod count. "
        "A pod pairs 4 compute units (CUs) that share one scratch memory.")])
    assert profile.num_compute_units.value is None
    assert profile.get("mem_capacity_gb") is None
