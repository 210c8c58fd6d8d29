"""The pregather_tma pattern: contiguous prefix + TMA descriptor loads, only on chips with a bulk tensor-copy engine
and only where the copy pass is amortized (compute-bound). Expected values are worked out by hand below."""

import pytest

from kernels.extend_attention.spec import TASK
from knowledge.catalog import load_catalog
from knowledge.graph import PatternGraph
from knowledge.ranking import rank_patterns
from knowledge.variables import case_variables
from tests.knowledge.chips import a100, h100, h200, m890, make_profile, mi300x

pytestmark = pytest.mark.usefixtures("chiplore_home")

PEAK_BF16 = 989.5e12  # dense bf16 FLOP/s of h100/h200 (tests.knowledge.chips)
BW_H200 = 4800e9  # bytes/s


@pytest.fixture(scope="module")
def graph():
    return PatternGraph.build(load_catalog())


def _pattern(profile, case_id, graph):
    ranked = rank_patterns(profile, TASK, case_id, graph=graph)
    return next(r for r in ranked if r.pattern_id == "pregather_tma"), ranked


@pytest.mark.parametrize(("case_id", "expected"), [
    # ΣP x H_kv x (D_qk + D_v) x 2 bytes (bf16)
    ("chunked-prefill", 32768 * 8 * 256 * 2),  # 134 MB
    ("decode", 64 * 8192 * 8 * 256 * 2),
    ("prefill", 0),  # no prefix
    ("mla", 4 * 8192 * 576 * 2),  # MLA: V is a view of K, one 576-wide row per token (H_kv = 1)
])
def test_prefix_kv_bytes(case_id, expected):
    assert case_variables("extend_attention", TASK.case(case_id))["prefix_kv_bytes"] == expected


def test_h200_chunked_prefill_pregathers_and_uses_tma(graph):
    p, ranked = _pattern(h200(), "chunked-prefill", graph)
    assert p.applicable and p.knobs == {"pregather": True, "tma": True}
    # copy: read + write of 32768 x 8 x 256 x 2 B = 134,217,728 B at 4.8 TB/s = 55.9 us
    copy_s = 2 * 134_217_728 / BW_H200
    # attention: FLOPs = 2 x 32 heads x 256 x (2048 x 32768 + 2048 x 2049 / 2) visible pairs = 1.1339e12 at half
    # the dense peak = 2292 us (the bandwidth floor, 176 MB / 4.8 TB/s = 37 us, is shorter)
    attn_s = 2 * 32 * 256 * (2048 * 32768 + 2048 * 2049 / 2) / (0.5 * PEAK_BF16)
    assert p.parameters["copy_s"] == pytest.approx(copy_s) and p.parameters["attn_s"] == pytest.approx(attn_s)
    # prior = 1.3 (H200 sweep 4) / (1 + 55.9 / 2292) = 1.269
    assert p.prior_gain == pytest.approx(1.3 / (1 + copy_s / attn_s)) and p.prior_gain == pytest.approx(1.269, abs=1e-3)
    assert p.prior_gain > 1 and ranked[0].pattern_id == "pregather_tma"
    assert all(c.holds for c in p.preconditions)  # the engine (requires) and compute-bound (favors)


@pytest.mark.parametrize(("case_id", "copy_us", "attn_us"), [
    # decode: copy 2 x 2,147,483,648 B / 4.8 TB/s = 894.8 us; attention at the bandwidth floor: compulsory bytes
    # 2 x (64 x (2 x 32 x 128 + 8 x 256) + 524288 x 8 x 256) + 8 x 524288 = 2,152,988,672 B -> 448.5 us
    ("decode", 2 * 2_147_483_648 / BW_H200 * 1e6, 2_152_988_672 / BW_H200 * 1e6),
    # spec-verify: ΣP = 262144 -> copy 447.4 us; bytes 2 x (256 x 10240 + 262144 x 2048) + 8 x 262144 -> 225.2 us
    ("spec-verify", 2 * 262144 * 4096 / BW_H200 * 1e6,
     (2 * (256 * 10240 + 262144 * 2048) + 8 * 262144) / BW_H200 * 1e6),
])
def test_h200_memory_bound_cases_rank_below_one(graph, case_id, copy_us, attn_us):
    p, ranked = _pattern(h200(), case_id, graph)
    assert p.parameters["pregather"] is False  # intensity (4 or 16 FLOP/B) < ridge 206 FLOP/B
    assert p.parameters["copy_s"] * 1e6 == pytest.approx(copy_us)
    assert p.parameters["attn_s"] * 1e6 == pytest.approx(attn_us)
    # prior = 1.3 / (1 + copy / attention) = 1.3 / 3.0 = 0.43: the pattern is expected to slow these cases down
    assert p.prior_gain == pytest.approx(1.3 / (1 + copy_us / attn_us)) and p.prior_gain < 1 and p.score < 0
    assert not next(c for c in p.preconditions if c.kind == "favors").holds
    applicable = [r.pattern_id for r in ranked if r.applicable]
    assert all(r.score >= 0 for r in ranked[:applicable.index("pregather_tma")])  # ranked after every gain


@pytest.mark.parametrize("chip", [a100, mi300x, m890], ids=["a100", "mi300x", "m890"])
@pytest.mark.parametrize("case_id", ["chunked-prefill", "prefill", "decode"])
def test_chips_without_the_engine_are_excluded(graph, chip, case_id):
    # a100: false (Ampere); mi300x, m890: unknown, which counts as no engine (coalesce(..., False))
    p, ranked = _pattern(chip(), case_id, graph)
    assert not p.applicable and p.knobs == {"pregather": False, "tma": False}
    assert next(c for c in p.preconditions if c.kind == "requires").holds is False
    assert ranked.index(p) >= sum(r.applicable for r in ranked)  # after every applicable pattern


def test_h200_prefill_without_prefix_copies_nothing(graph):
    p, ranked = _pattern(h200(), "prefill", graph)
    # compute-bound, so pregather is on (a no-op without a prefix: the family copies nothing when ΣP = 0, and the
    # dispatch class compute-d128 shares one configuration with chunked prefill); no copy time, so the prior is the
    # measured 1.3
    assert p.knobs == {"pregather": True, "tma": True} and p.parameters["copy_s"] == 0
    assert p.prior_gain == pytest.approx(1.3) and ranked[0].pattern_id == "pregather_tma"


def test_engine_with_unknown_peaks_keeps_tma_and_leaves_pregather_unknown(graph):
    chip = make_profile("tma_chip", num_compute_units=8, smem_per_block_kb=100, tensor_memory_accelerator=True)
    p, _ = _pattern(chip, "chunked-prefill", graph)
    assert p.applicable and p.knobs == {"pregather": None, "tma": True}  # ridge unknown
    assert p.prior_gain is None and p.unknown["prior_gain"] == "needs copy_s (unknown)"
    assert "peak_bw" in p.unknown["copy_s"]


def test_h100_has_the_engine_too(graph):
    p, _ = _pattern(h100(), "chunked-prefill", graph)
    assert p.applicable and p.knobs == {"pregather": True, "tma": True} and p.prior_gain > 1
