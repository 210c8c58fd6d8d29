"""The packaged pattern catalog loads, covers the field's techniques, and rejects broken entries clearly."""

import math
from pathlib import Path

import pytest

from kernels.task import load_task
from knowledge.catalog import CATALOG_PATH, CatalogError, load_catalog

TASK_CATALOG = load_task("extend_attention").files.catalog

SEEDED = {"split_kv", "preallocated_workspace", "metadata_lengths", "multi_query_blocks", "tile_sizing",
          "software_pipelining", "warp_count", "int64_indexing", "persistent_grid", "pregather_tma",
          # the knobs of the tuned entry point (kernels/extend_attention/tuned.py)
          "measured_tiles", "gather_ahead", "ragged_tiles", "mla_kernel", "exp2_scale_fold", "heavy_first"}
#: Patterns that only split-K GEMM's catalog part defines.
GEMM_ONLY = {"fused_split_reduce", "gemv_stream"}
BOTTLENECKS = {"memory-bound", "compute-bound", "occupancy", "launch-overhead"}


def test_packaged_catalog_covers_the_techniques():
    cat = load_catalog()
    assert {p.id for p in cat.patterns} == SEEDED | GEMM_ONLY
    assert BOTTLENECKS <= {b.id for b in cat.bottlenecks}
    for task in ("extend_attention", "splitk_gemm"):
        knobs = set(load_task(task).knobs)
        for p in cat.patterns_for(task):
            assert p.sources and p.addresses, (task, p.id)
            assert set(p.knobs) <= knobs, (task, p.id)
    assert GEMM_ONLY & {p.id for p in cat.patterns_for("splitk_gemm")} == GEMM_ONLY
    assert not GEMM_ONLY & {p.id for p in cat.patterns_for("extend_attention")}
    # the family's split rule itself (num_splits 0: splits.split_factor per call), right for every call of a class
    assert cat.pattern("split_kv", "extend_attention").knobs == {"num_splits": "0"}
    assert cat.pattern("multi_query_blocks", "extend_attention").knobs == {"pack_gqa": "pack_gqa", "block_m": "block_m"}
    # generic sources of the idea plus the task's own (SGLang's split-KV decode)
    split = cat.pattern("split_kv", "extend_attention")
    assert {"public_result", "stream_k", "sglang_decode"} <= set(split.sources)
    assert "sglang_decode" not in cat.pattern("split_kv").sources
    tma = cat.pattern("pregather_tma", "extend_attention")
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


def _variant(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert old in text, old
    path = tmp_path / f"variant_{source.name}"
    path.write_text(text.replace(old, new, 1))
    return path


def _load_task_variant(tmp_path: Path, old: str, new: str):
    return load_catalog(task_files={"extend_attention": _variant(tmp_path, TASK_CATALOG, old, new)})


def test_formula_with_missing_profile_field_names_pattern_and_field(tmp_path):
    with pytest.raises(CatalogError) as info:
        _load_task_variant(tmp_path, "num_compute_units * resident_min", "num_compute_unitz * resident_min")
    msg = str(info.value)
    assert "pattern 'split_kv'" in msg and "'num_compute_unitz'" in msg and "slots" in msg
    assert str(TASK_CATALOG.name) in msg  # the task's file is named


def test_prior_formula_with_missing_field_names_the_pattern(tmp_path):
    with pytest.raises(CatalogError, match=r"pattern 'split_kv' \(prior_gain\).*'smem_per_sm_kb'"):
        _load_task_variant(tmp_path, 'prior_gain: "split_gain"', 'prior_gain: "split_gain * smem_per_sm_kb"')


@pytest.mark.parametrize("old, new, message", [
    ('knobs: {num_splits: "0"}', 'knobs: {num_splitz: "0"}', "unknown knob"),
    ('prior_gain: "split_gain"', 'prior_gain: "__import__(1)"', "unknown function"),
    ('prior_gain: "split_gain"', 'prior_gain: "split_gain.real"', "Attribute is not allowed"),
    ("composes_with: [multi_query_blocks]", "composes_with: [multi_query_blockz]", "unknown pattern id"),
    ("addresses: [memory-bound, compute-bound]", "addresses: [memory-bound, latency]", "unknown bottleneck id"),
    ("format_version: 1", "format_version: 99", "format_version 99"),
    ("task: extend_attention", "task: other_task", "registered as 'extend_attention'"),
    ('{name: pack_gqa, formula: "G > 1"', '{name: pack_gqa, formula: "G > 1 and num_splits > 0"', "cycle"),
    ("  - id: split_kv\n", "  - id: split_kv\n    name: Split again\n", "defined in the generic catalog"),
    ("  - id: warp_count\n", "  - id: warp_countt\n", "unknown pattern id"),
    ("  occupancy: \"programs_base < slots\"", "  occupancy: \"programs_bass < slots\"", "'programs_bass'"),
])
def test_broken_task_entries_fail_at_load(tmp_path, old, new, message):
    with pytest.raises(CatalogError, match=message):
        _load_task_variant(tmp_path, old, new)


@pytest.mark.parametrize("old, new, message", [
    ("conflicts_with: [persistent_grid]", "conflicts_with: [persistent_grids]", "unknown pattern id"),
    ("addresses: [occupancy, memory-bound]", "addresses: [occupancy, latency]", "unknown bottleneck id"),
    ('signal: "intensity < ridge"', 'signal: "intensity < ridge and P_max > 0"', "'P_max'"),
])
def test_broken_generic_entries_fail_at_load(tmp_path, old, new, message):
    """The generic part may only use what every task has: a signal over extend attention's P_max fails."""
    with pytest.raises(CatalogError, match=message):
        load_catalog(_variant(tmp_path, CATALOG_PATH, old, new))


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "missing.yaml")
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(task_files={"extend_attention": tmp_path / "missing.yaml"})
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\npatterns: [\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog(bad)
