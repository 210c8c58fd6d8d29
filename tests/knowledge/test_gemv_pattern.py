"""Retrieval of split-K GEMM's GEMV pattern (kernels/splitk_gemm/catalog.yaml, gemv_stream): proposed for a few
rows where the vector units keep the call memory-bound (the vector ridge point from the profile's fp32 peak and
bandwidth), not for more rows, not on a chip whose vector units are too slow, unknown without the fp32 peak."""

import pytest

from kernels.splitk_gemm.cases import full_params
from kernels.task import Case, load_task
from knowledge.catalog import load_catalog
from knowledge.graph import PatternGraph
from knowledge.ranking import rank_patterns
from tests.knowledge.chips import make_profile

pytestmark = pytest.mark.usefixtures("chiplore_home")
TASK = load_task("splitk_gemm")


def _chip(fp32_tflops, bw_gbps=4800.0):
    peaks = {"bf16": 989.5, "fp16": 989.5, **({"fp32": fp32_tflops} if fp32_tflops is not None else {})}
    return make_profile("gpu-x", peaks, num_compute_units=132, warp_size=32, max_threads_per_block=1024,
                        smem_per_block_kb=227, smem_per_compute_unit_kb=228, mem_bw_gbps=bw_gbps)


def _gemv(profile, m, n=4096, k=4096):
    case = Case(f"m{m}", full_params(dict(m=m, n=n, k=k)), 1, "decode")
    ranked = rank_patterns(profile, TASK, case, graph=PatternGraph.build(load_catalog()))
    return next(r for r in ranked if r.pattern_id == "gemv_stream")


def test_proposed_for_one_row_with_the_gemv_tile_rule():
    """67 TFLOP/s fp32 over 4.8 TB/s: vector ridge ~14 FLOP/byte, intensity ~1 at M = 1. Tile by hand: a 128 x 64
    bf16 tile over 8 warps is 32 accumulator elements per thread (4 16-byte loads); Little's law wants 4.8e12 x
    2.5e-6 / 132 = 90.9 KB in flight per unit, 1 + ceil(90909 / 16384) = 7 stages, capped at 6."""
    r = _gemv(_chip(67.0), 1)
    assert r.applicable and r.knobs == {"gemv": True, "split_k": 0, "fused_reduce": True, "block_n": 128,
                                        "block_k": 64, "num_warps": 8, "num_stages": 6}
    assert r.parameters["vector_ridge"] == pytest.approx(67e12 / 4.8e12)
    assert r.parameters["tensor_headroom"] > 16


def test_stages_follow_the_chip_bandwidth():
    """1 TB/s: 1e12 x 2.5e-6 / 132 = 18.9 KB in flight per unit, 1 + ceil(18939 / 16384) = 3 stages."""
    r = _gemv(_chip(67.0, bw_gbps=1000.0), 1)
    assert r.applicable and (r.knobs["block_n"], r.knobs["block_k"], r.knobs["num_stages"]) == (128, 64, 3)


@pytest.mark.parametrize("m", [2, 4, 5])
def test_not_offered_for_more_than_one_row(m):
    """The several-rows path measured 2-20x slower than cuBLAS (BENCHMARKS.md, few-row sweep): not offered."""
    r = _gemv(_chip(67.0), m)
    assert not r.applicable and r.knobs.get("gemv") in (None, False)


def test_not_where_the_vector_units_are_too_slow():
    """fp32 5 TFLOP/s over 4.8 TB/s: vector ridge ~1 FLOP/byte; even M = 1 (intensity ~1) would be compute-bound
    on the vector units (the rule holds on a chip other than the one it was written for)."""
    assert not _gemv(_chip(5.0), 1).applicable
    assert _gemv(_chip(5.0, bw_gbps=1000.0), 1).applicable


def test_unknown_without_the_vector_peak():
    """No fp32 peak in the profile: the memory-bound precondition and the gemv knob are unknown (never a default),
    and the reason names the missing field."""
    r = _gemv(_chip(None), 1)
    assert [p.holds for p in r.preconditions if p.formula == "gemv_memory_bound"] == [None]
    assert r.knobs["gemv"] is None and "peak_tflops_fp32" in r.unknown["vector_ridge"]
