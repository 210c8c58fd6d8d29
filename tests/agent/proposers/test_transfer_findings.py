"""Findings measured on a bigger chip seed the first proposal on a small one: re-fitted to its limits, not dropped."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from agent.family_space import FamilySpace
from agent.proposers.offline import PatternGuidedProposer
from agent.seams import Citation
from kernels.extend_attention.spec import TASK
from tests.agent.helpers import h200_profile

EXPORT = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "h200_findings.json"
CASES = [c for c in TASK.bench_cases if c.id in ("decode", "chunked-prefill", "small-heads")]


def _profile(units: int, smem_kb: float):
    p = h200_profile()
    return p.model_copy(update={
        "chip": "tessera-test",
        "num_compute_units": p.num_compute_units.model_copy(update={"value": units}),
        "smem_per_block_kb": p.smem_per_block_kb.model_copy(update={"value": smem_kb})})


def _h200_findings() -> list[Citation]:
    """The accepted H200 findings of the shipped export, as the store returns them (metadata of `query_findings`)."""
    rows = json.loads(EXPORT.read_text())["findings"]
    return [Citation(f"finding {r['id']}", "", 1.0, "findings", r["id"], {
        "status": r["status"], "speedup": r["speedup"], "chip": r["chip"], "case_id": r["case_id"],
        "patterns": r["patterns"], "parameters": r["parameters"]}) for r in rows if r["status"] == "accepted"]


def _ctx(space: FamilySpace, chip: str) -> SimpleNamespace:
    return SimpleNamespace(
        n=1, run_id="t", chip=chip, retrieval=SimpleNamespace(findings=_h200_findings(), patterns={}),
        best_id="v0", best_table={}, best_time_us={}, best_lineage=None, diagnoses={}, history=[],
        signature=inspect.signature(TASK.load_entry_point()))


def _smem_kb(config: dict, head_dim: int) -> float:
    """bf16 K and V tiles per stage plus the Q tile, KiB (computed here, not with the family's helper)."""
    return 2 * (config["num_stages"] * config["block_n"] * 2 * head_dim + config["block_m"] * head_dim) / 1024


def _top_h200(key: str) -> dict:
    """The H200's fastest accepted configuration of class `key` over the cases the run measures."""
    best: dict[str, tuple[float, dict]] = {}
    case_ids = {c.id for c in CASES}
    for f in _h200_findings():
        p = f.metadata["parameters"]
        if p["dispatch_class"] == key and f.metadata["case_id"] in case_ids:
            k = json.dumps({n: v for n, v in p.items() if n != "candidate"}, sort_keys=True)
            if k not in best or f.metadata["speedup"] > best[k][0]:
                best[k] = (f.metadata["speedup"], p)
    return max(best.values(), key=lambda t: t[0])[1]


def test_first_proposal_on_a_small_chip_is_the_h200_findings_refitted():
    space = FamilySpace(TASK, _profile(40, 48.0), CASES)
    proposal = PatternGuidedProposer(space).propose(_ctx(space, "tessera-test"))  # type: ignore[arg-type]
    table = proposal.parameters["table"]
    head_dims = {"compute-d128": 128, "memory-d128": 128, "compute-d64": 64}
    assert set(table) == set(head_dims) and proposal.parameters["move"] is None
    for key, head_dim in head_dims.items():
        config, h200 = table[key], _top_h200(key)
        assert _smem_kb(config, head_dim) <= 48.0, (key, config)
        assert config["num_warps"] * 32 <= 1024
        # follows the finding: split factor and switches as measured, pipelining kept where the finding pipelined
        for knob in ("num_splits", "pack_gqa", "pregather", "tma"):
            assert config[knob] == h200[knob], (key, knob)
        assert config["num_stages"] >= min(h200["num_stages"], 2)
    # the tiles the re-fit rule gives (stages to 2, then halve the larger tile; warps with the tile's area)
    assert {k: (table[k]["block_m"], table[k]["block_n"], table[k]["num_stages"], table[k]["num_warps"])
            for k in head_dims} == {"compute-d128": (64, 32, 2, 4), "memory-d128": (16, 32, 2, 4),
                                    "compute-d64": (128, 64, 2, 4)}
    assert "re-fitted to this chip" in proposal.rationale


def test_findings_that_fit_are_copied_unchanged_on_the_chip_they_came_from():
    space = FamilySpace(TASK, h200_profile(), CASES)
    proposal = PatternGuidedProposer(space).propose(_ctx(space, "h200"))  # type: ignore[arg-type]
    for key, config in proposal.parameters["table"].items():
        h200 = _top_h200(key)
        assert {k: config[k] for k in h200 if k not in ("candidate", "dispatch_class")} == {
            k: v for k, v in h200.items() if k not in ("candidate", "dispatch_class")}
    assert "re-fitted" not in proposal.rationale


@pytest.mark.parametrize("smem_kb", [24.0, 32.0, 64.0, 100.0])
def test_refit_fits_other_caps_and_keeps_the_other_knobs(smem_kb):
    space = FamilySpace(TASK, _profile(40, smem_kb), CASES)
    measured = space.complete({"block_m": 128, "block_n": 128, "num_stages": 3, "num_warps": 8, "num_splits": 4,
                               "pack_gqa": True, "pregather": True, "tma": True})
    fitted = space.refit(measured, "compute-d128")
    assert fitted is not None and _smem_kb(fitted, 128) <= smem_kb
    assert {k: v for k, v in fitted.items() if k not in ("block_m", "block_n", "num_stages", "num_warps")} == {
        k: v for k, v in measured.items() if k not in ("block_m", "block_n", "num_stages", "num_warps")}


def test_refit_gives_none_when_nothing_fits():
    space = FamilySpace(TASK, _profile(40, 8.0), CASES)
    big = space.complete({"block_m": 128, "block_n": 128, "num_stages": 3, "num_warps": 8})
    assert space.refit(big, "compute-d128") is None  # 16 x 32 tiles, one stage: 20 KiB of bf16 K, V and Q
