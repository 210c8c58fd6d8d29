"""Which fields the optimizer needs (from the real pattern catalog) and the advice printed when they are unknown."""

from __future__ import annotations

from hardware_profiles import HardwareProfile, ProfileField, load_profile
from ingest.profile_needs import how_to_fill, missing_fields, needed_fields


def test_needed_fields_come_from_the_catalog_and_the_roofline():
    needs = needed_fields()
    assert any(user.startswith("split.") for user in needs["num_compute_units"])  # the split-KV factor
    assert any(user.startswith("tiles.") for user in needs["smem_per_block_kb"])  # the tile budget
    assert "roofline" in needs["mem_bw_gbps"] and "roofline" in needs["peak_tflops"]


def test_a_full_profile_misses_nothing_an_empty_one_everything_needed():
    assert [m.field for m in missing_fields(load_profile("h200"))] == []
    empty = [m.field for m in missing_fields(HardwareProfile(chip="zx"))]
    assert {"num_compute_units", "smem_per_block_kb", "mem_bw_gbps", "peak_tflops.bf16|fp16"} <= set(empty)
    some = HardwareProfile(chip="zx", num_compute_units=ProfileField(value=48, unit="count", kind="stated"))
    assert "num_compute_units" not in [m.field for m in missing_fields(some)]


def test_advice_names_the_three_ways():
    lines = how_to_fill("zx40", missing_fields(HardwareProfile(chip="zx40")))
    text = "\n".join(lines)
    assert "num_compute_units (" in text and "chiplore onboard zx40" in text
    assert "chiplore profile probe zx40" in text and "chiplore profile set zx40" in text and "--source" in text
    assert how_to_fill("h200", []) == []
