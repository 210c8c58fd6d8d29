"""Ranking: parameters computed per chip, priors from roofline/occupancy arithmetic, evidence by chip similarity."""

import json
import math

import pytest
import torch

from core.errors import BadInputError
from kernels.extend_attention.cases import full_params
from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import FamilyConfig, smem_footprint_kb
from kernels.extend_attention.spec import TASK, bytes_moved, flops
from kernels.task import Case
from knowledge.catalog import load_catalog
from knowledge.findings import Finding
from knowledge.graph import PatternGraph
from knowledge.ranking import classify_case, rank_patterns
from knowledge.similarity import chip_features
from tests.knowledge.chips import a100, h100, h200, m890, make_profile, mi300x

pytestmark = pytest.mark.usefixtures("chiplore_home")

@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture()
def graph(catalog):
    """The catalog's graph with no findings (the public example is its only evidence)."""
    return PatternGraph.build(catalog)


def _by_id(ranked):
    return {r.pattern_id: r for r in ranked}


def _problem(case) -> Problem:
    p = case.params
    return Problem(len(p["extend_lens"]), sum(p["extend_lens"]), sum(p["prefix_lens"]), p["num_q_heads"],
                   p["num_kv_heads"], p["head_dim"], p["head_dim_v"], torch.bfloat16)


def _family_footprint(knobs: dict, case, v_is_k: bool) -> float:
    """Shared memory of the lead's kernel family at these knobs (kernels.extend_attention.family)."""
    cfg = FamilyConfig(block_m=knobs["block_m"], block_n=knobs["block_n"], num_stages=knobs["num_stages"])
    return smem_footprint_kb(cfg, _problem(case), v_is_k)


def _split_time(programs, units, residents, s, merge, tiles, fill=0.5):
    """Wave quantization averaged over resident counts, pipeline fill, partial-merge traffic (catalog rule)."""
    quant = sum(math.ceil(programs * s / (units * r)) / (programs * s / (units * r)) for r in residents)
    return quant / len(residents) * (1 + fill * s / tiles) + (s * merge if s > 1 else 0.0)


def test_m890_split_follows_the_family_rule(graph):
    """The catalog's split factor is the family's own rule (kernels/extend_attention/splits.py): split until about
    4 programs per compute unit, at least 256 prefix keys per split, at most 32 (2 when compute-bound)."""
    case = TASK.case("spec-verify")
    r = _by_id(rank_patterns(m890(), TASK, case, graph=graph))
    split = r["split_kv"]
    # 64 sequences x 8 KV heads, the 4 rows x G=4 heads of a sequence fit one 16-row tile: 512 programs, already
    # 14 waves on 36 units: no split, so the pattern does not apply; the public run on this chip is its evidence
    assert split.parameters["programs_base"] == 64 * 8
    assert split.parameters["slots"] == 36  # smem per compute unit unknown: one resident program per unit
    assert split.parameters["num_splits"] == 1 and not split.applicable
    assert any("Public run" in e.citation and e.chip == "m890" and e.similarity == 1.0 for e in split.evidence)
    assert split.knobs == {"num_splits": 4} and "Public run" in split.knob_sources["num_splits"]
    # one sequence decoding over a 32k prefix: 8 programs (one per KV head) -> ceil(4 x 36 / 8) = 18 splits
    # (32768 / 256 = 128 allowed by length, under the cap of 32)
    lone = Case("lone-decode", full_params({"extend_lens": [1], "prefix_lens": [32768]}), 1, "decode")
    one = _by_id(rank_patterns(m890(), TASK, lone, graph=graph))["split_kv"]
    assert one.parameters["programs_base"] == 8 and one.parameters["num_splits"] == 18 and one.applicable
    tiles = r["tile_sizing"]
    assert tiles.knobs == {"block_m": 16, "block_n": 32, "num_stages": 2}
    assert tiles.parameters["footprint_kb"] == pytest.approx(_family_footprint(tiles.knobs, case, False))
    assert tiles.parameters["footprint_kb"] <= 48


def test_h200_parameters_differ(graph):
    case = TASK.case("spec-verify")
    h = _by_id(rank_patterns(h200(), TASK, case, graph=graph))
    m = _by_id(rank_patterns(m890(), TASK, case, graph=graph))
    split = h["split_kv"]
    # one 196 KB program fits a 228 KB SM; a one-stage footprint (68 KB) would let 3 fit
    assert (split.parameters["resident_min"], split.parameters["resident_max"]) == (1, 3)
    merge = 8 * 256 * 32 * (128 + 1) / bytes_moved(case)
    times = {s: _split_time(512, 132, [1, 2, 3], s, merge, 4096 / 128) for s in (1, 2, 4, 8, 16)}
    # 2 splits (ceil(4 x 132 / 512)): within the split-KV 2-4 measured best on an H200 (BENCHMARKS.md, 'Kernel
    # sweeps', sweep 3) and the split the modeled time prefers
    assert split.parameters["num_splits"] == 2 == min(times, key=times.get)
    assert split.knobs == {"num_splits": 0}  # the knob is the rule itself, applied per call (family: 0)
    assert split.prior_gain == pytest.approx(times[1] / times[2])
    assert split.knob_sources == {"num_splits": "rule"} and split.applicable
    assert split.knobs != m["split_kv"].knobs  # m890: the public run's measured split
    assert h["tile_sizing"].knobs == {"block_m": 16, "block_n": 128, "num_stages": 3}
    assert h["tile_sizing"].knobs != m["tile_sizing"].knobs
    assert _family_footprint(h["tile_sizing"].knobs, case, False) <= 227
    # roofline prior of multi-query blocks: baseline 128-row tiles hold 4 useful rows (32x MMA waste)
    pf, pb = 989.5e12, 4800e9
    expected = max(flops(case) * 32 / pf, bytes_moved(case) / pb) / max(flops(case) / pf, bytes_moved(case) / pb)
    assert h["multi_query_blocks"].prior_gain == pytest.approx(expected)
    ranked = rank_patterns(h200(), TASK, case, graph=graph)
    assert ranked[0].pattern_id == "multi_query_blocks"
    assert h["warp_count"].knobs == {"num_warps": 8}


def test_mi300x_mla_tiles_fit_64kb_lds(graph):
    case = TASK.case("mla")
    r = _by_id(rank_patterns(mi300x(), TASK, case, graph=graph))
    tiles = r["tile_sizing"]
    assert tiles.applicable and tiles.knobs == {"block_m": 16, "block_n": 32, "num_stages": 1}
    footprint = _family_footprint(tiles.knobs, case, v_is_k=True)  # MLA: V is a view of K
    assert footprint == pytest.approx(tiles.parameters["footprint_kb"]) and footprint <= 64
    assert _family_footprint(tiles.knobs, case, v_is_k=False) > 64  # why V must share K's tile
    assert not r["software_pipelining"].applicable  # a second 32 x 576 stage does not fit
    # wavefront 64 with threads per block unknown: warp count unknown, not a crash
    assert r["warp_count"].knobs == {"num_warps": None}
    assert "max_threads_per_block" in r["warp_count"].unknown["num_warps"]
    known = make_profile("mi300x", {"bf16": 1307.4}, num_compute_units=304, warp_size=64,
                         max_threads_per_block=1024, smem_per_block_kb=64, mem_bw_gbps=5300)
    w = _by_id(rank_patterns(known, TASK, case, graph=graph))["warp_count"]
    assert w.parameters == {"num_warps": 8, "max_warps": 1024 // 64}


def test_null_profile_fields_make_parameters_unknown(graph):
    profile = m890()
    for case in (*TASK.bench_cases, *TASK.test_cases):
        ranked = rank_patterns(profile, TASK, case, graph=graph)
        assert len(ranked) == 16  # every extend-attention pattern of the catalog
    r = _by_id(rank_patterns(profile, TASK, "decode", graph=graph))
    assert r["warp_count"].parameters == {"num_warps": None, "max_warps": None}
    assert r["multi_query_blocks"].prior_gain is None
    assert "peak_flops" in r["multi_query_blocks"].unknown["prior_gain"]
    assert r["multi_query_blocks"].knobs == {"pack_gqa": True, "block_m": 16}
    signals = {b["id"]: b for b in classify_case(profile, TASK, "decode")}
    assert signals["memory-bound"]["holds"] is None and "ridge" in signals["memory-bound"]["reason"]
    assert signals["occupancy"]["holds"] is False


def _finding(chip, pattern, speedup, case_id="spec-verify", i=0, stage="pass", accepted=True):
    f = Finding(chip=chip.chip, task="extend_attention", case_id=case_id,
                case_class=TASK.case(case_id).case_class, patterns=(pattern,), parameters={},
                baseline_time_us=speedup * 100.0 if stage == "pass" else None,
                candidate_time_us=100.0 if stage == "pass" else None, verdict_stage=stage,
                verdict_id=f"v{i}", run_id=f"run-{chip.chip}", date="2026-11-30", accepted=accepted)
    return f.record(chip_features(chip))


def _score(profile, graph, pattern, case="spec-verify"):
    ranked = rank_patterns(profile, TASK, case, graph=graph)
    return next(r.score for r in ranked if r.pattern_id == pattern), [r.pattern_id for r in ranked]


def test_findings_on_a_similar_chip_move_the_ranking_more(catalog):
    """Findings on h100 (A) move the ranking score on h200 (B, same SMs and shared memory) more than on mi300x and
    m890 (C: other unit count, LDS size, wavefront width, or unknown features)."""
    empty, with_a = PatternGraph.build(catalog), PatternGraph.build(catalog)
    for i in range(3):
        with_a.add_finding(_finding(h100(), "software_pipelining", 2.5, i=i))
    deltas = {}
    for chip in (h200(), mi300x(), m890()):
        before, _ = _score(chip, empty, "software_pipelining")
        after, _ = _score(chip, with_a, "software_pipelining")
        deltas[chip.chip] = after - before  # change of ln(expected gain), the ranking score
    assert deltas["h200"] > deltas["mi300x"] > 0
    assert deltas["h200"] > deltas["m890"] > 0
    # independent value on B: similarity from bandwidth/FLOP ratio alone (other features equal)
    sim = ((3350 / 989.5) / (4800 / 989.5)) ** 0.25
    r = _by_id(rank_patterns(h200(), TASK, "spec-verify", graph=with_a))["software_pipelining"]
    ev = [e for e in r.evidence if e.kind == "finding"]
    assert all(e.similarity == pytest.approx(sim) and e.affinity == 1.0 for e in ev)
    ex = next(e for e in r.evidence if e.kind == "example")
    prior_weight = 1.0  # catalog scoring.prior_weight; software_pipelining has no prior formula: ln 1 = 0
    num = prior_weight * 0.0 + ex.weight * ex.log_gain + 3 * sim * math.log(2.5)
    assert r.score == pytest.approx(num / (prior_weight + ex.weight + 3 * sim))


def test_same_chip_evidence_counts_most(catalog):
    own, other = PatternGraph.build(catalog), PatternGraph.build(catalog)
    own.add_finding(_finding(h200(), "persistent_grid", 1.5))
    other.add_finding(_finding(a100(), "persistent_grid", 1.5))
    base, _ = _score(h200(), PatternGraph.build(catalog), "persistent_grid", "mixed-batch")
    s_own, _ = _score(h200(), own, "persistent_grid", "mixed-batch")
    s_other, _ = _score(h200(), other, "persistent_grid", "mixed-batch")
    assert s_own > s_other > base


def test_same_chip_measurements_set_knob_values(catalog):
    g = PatternGraph.build(catalog)
    other = _finding(h100(), "split_kv", 1.4, i=1)
    other["parameters"] = {"num_splits": 8}
    g.add_finding(other)
    r = _by_id(rank_patterns(h200(), TASK, "spec-verify", graph=g))["split_kv"]
    assert r.knobs == {"num_splits": 0} and r.knob_sources["num_splits"] == "rule"  # another chip: rule stays
    own = _finding(h200(), "split_kv", 1.3, i=2)
    own["parameters"] = {"num_splits": 4, "block_n": 128}
    g.add_finding(own)
    r = _by_id(rank_patterns(h200(), TASK, "spec-verify", graph=g))["split_kv"]
    assert r.knobs == {"num_splits": 4} and r.knob_sources["num_splits"].startswith("evidence: finding")
    assert r.parameters["num_splits"] == 2  # the rule's value is still reported


def test_failed_attempts_lower_the_expected_gain(catalog):
    g = PatternGraph.build(catalog)
    before = _by_id(rank_patterns(h200(), TASK, "decode", graph=g))["multi_query_blocks"].expected_gain
    for i in range(3):
        g.add_finding(_finding(h200(), "multi_query_blocks", 1.0, case_id="decode", i=i, stage="compile_error",
                               accepted=False))
    after = _by_id(rank_patterns(h200(), TASK, "decode", graph=g))["multi_query_blocks"]
    assert after.expected_gain < before
    assert sum(not e.supports for e in after.evidence) == 3


def test_diagnosis_drives_overhead_priors_and_focus(graph):
    diag = {"bottleneck": "launch-overhead", "time_us": 100.0, "host_overhead_us": 40.0}
    r = rank_patterns(h200(), TASK, "decode", diag, graph=graph)
    d = _by_id(r)
    assert d["preallocated_workspace"].prior_gain == pytest.approx(1 / (1 - 0.4))
    assert r[0].pattern_id in {"preallocated_workspace", "metadata_lengths"}
    plain = _by_id(rank_patterns(h200(), TASK, "decode", graph=graph))["multi_query_blocks"].score
    assert d["multi_query_blocks"].score == pytest.approx(0.5 * plain)  # off-diagnosis factor


def test_unknown_task_or_case_names_the_known_ones(graph):
    with pytest.raises(BadInputError, match="spec-verify"):
        rank_patterns(h200(), TASK, "spec-verfy", graph=graph)
    with pytest.raises(BadInputError, match="extend_attention"):
        rank_patterns(h200(), "extend_atention", "decode", graph=graph)


def test_json_output_is_serializable(graph):
    for r in rank_patterns(m890(), TASK, "spec-verify", graph=graph):
        doc = json.loads(json.dumps(r.to_json()))
        assert {"pattern_id", "parameters", "knobs", "expected_gain", "evidence", "score"} <= set(doc)
