"""The packaged pattern catalog loads, covers the field's techniques, and rejects broken entries clearly."""

import math
from pathlib import Path

import pytest

from kernels.task import load_task
from knowledge.catalog import CATALOG_PATH, CatalogError, load_catalog

SEEDED = {"split_kv", "preallocated_workspace", "metadata_lengths", "multi_query_blocks", "tile_sizing",
          "software_pipelining", "warp_count", "int64_indexing", "persistent_grid", "pregather_tma"}
BOTTLENECKS = {"memory-bound", "compute-bound", "occupancy", "launch-overhead"}


def test_packaged_catalog_covers_the_techniques():
    cat = load_catalog()
    assert {p.id for p in cat.patterns} == SEEDED
    assert BOTTLENECKS <= {b.id for b in cat.bottlenecks}
    knobs = set(load_task("extend_attention").knobs)
    for p in cat.patterns:
        assert p.sources and p.addresses, p.id
        assert set(p.knobs) <= knobs, p.id
    assert cat.pattern("split_kv").knobs == {"num_splits": "num_splits"}
    assert cat.pattern("multi_query_blocks").knobs == {"pack_gqa": "pack_gqa", "block_m": "block_m"}
    assert "public_result" in cat.pattern("split_kv").sources
    tma = cat.pattern("pregather_tma")
    assert tma.knobs == {"pregather": "pregather", "tma": "tma"} and tma.requires_features == ("bulk_tensor_copy",)
    assert tma.addresses == ("compute-bound",) and {"h200_sweeps", "flashattention3", "triton_docs"} <= set(tma.sources)
    feature = next(f for f in cat.hardware_features if f.id == "bulk_tensor_copy")
    assert feature.profile_fields == ("tensor_memory_accelerator",)


def test_public_example_apportions_the_total_speedup():
    ex = load_catalog().examples[0]
    assert ex.chip == "m890" and ex.total_speedup == 10.0
    gains = ex.step_log_gains()
    harmonic = sum(1 / k for k in range(1, 6))
    assert math.isclose(sum(gains), math.log(10.0))
    assert math.isclose(gains[0], math.log(10.0) / harmonic)
    assert gains == sorted(gains, reverse=True)
    assert ex.steps[0].patterns == ("split_kv",) and ex.steps[0].parameters == {"num_splits": [4, 9]}


def _write_variant(tmp_path: Path, old: str, new: str) -> Path:
    text = CATALOG_PATH.read_text()
    assert old in text, old
    path = tmp_path / "catalog.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_formula_with_missing_profile_field_names_pattern_and_field(tmp_path):
    path = _write_variant(tmp_path, "num_compute_units * resident_min", "num_compute_unitz * resident_min")
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    msg = str(info.value)
    assert "pattern 'split_kv'" in msg and "'num_compute_unitz'" in msg and "slots" in msg


def test_prior_formula_with_missing_field_names_the_pattern(tmp_path):
    path = _write_variant(tmp_path, 'prior_gain: "split_gain"', 'prior_gain: "split_gain * smem_per_sm_kb"')
    with pytest.raises(CatalogError, match=r"pattern 'split_kv' \(prior_gain\).*'smem_per_sm_kb'"):
        load_catalog(path)


@pytest.mark.parametrize("old, new, message", [
    ("knobs: {num_splits: num_splits}", "knobs: {num_splitz: num_splits}", "unknown knob"),
    ('prior_gain: "split_gain"', 'prior_gain: "__import__(1)"', "unknown function"),
    ('prior_gain: "split_gain"', 'prior_gain: "split_gain.real"', "Attribute is not allowed"),
    ("conflicts_with: [persistent_grid]", "conflicts_with: [persistent_grids]", "unknown pattern id"),
    ("addresses: [occupancy, memory-bound]", "addresses: [occupancy, latency]", "unknown bottleneck id"),
    ("format_version: 1", "format_version: 99", "format_version 99"),
    ('{name: pack_gqa, formula: "G > 1"', '{name: pack_gqa, formula: "G > 1 and num_splits > 0"', "cycle"),
])
def test_broken_entries_fail_at_load(tmp_path, old, new, message):
    with pytest.raises(CatalogError, match=message):
        load_catalog(_write_variant(tmp_path, old, new))


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\npatterns: [\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog(bad)
