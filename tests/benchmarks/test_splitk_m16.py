"""The M <= 16 split-K sweep (benchmarks/splitk_m16.py): its cases, its variants' outputs (Triton interpreter on the
CPU, float16 and float32, small shapes) and its table (a pure function of the rows; timing runs on the GPU, suite
splitk-m16)."""

from __future__ import annotations

import functools
import math

import pytest

from benchmarks.splitk_m16 import PRIORITY, m16_cases, m16_markdown, run_m16, variants
from kernels.chip import ChipLimits
from kernels.splitk_gemm.family import run_family
from kernels.splitk_gemm.spec import TASK
from kernels.splitk_gemm.tuned import choose_config
from tests.kernels.splitk_gemm.helpers import check_impl

#: 227 KB of shared memory per block (the H200's), few units so the small shapes split.
CHIP = ChipLimits(num_compute_units=8, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
H200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)


def test_cases_are_the_bench_cases_up_to_16_rows_priority_first():
    cases = m16_cases(TASK.bench_cases)
    assert [c.id for c in cases[:3]] == list(PRIORITY)
    assert {c.id for c in cases} == {c.id for c in TASK.bench_cases if c.params["m"] <= 16}
    assert len(cases) == 10


def _grid(cfg, case, limits):
    from dataclasses import replace

    from kernels.splitk_gemm.common import Problem
    from kernels.splitk_gemm.family import plan_launch

    p = case.params
    plan = plan_launch(cfg, Problem(p["m"], p["n"], p["k"], __import__("torch").bfloat16), limits)
    return replace(plan, config=replace(plan.config, split_k=0))


@pytest.mark.parametrize("case_id", ["m1-n4096-k14336", "m8-n4096-k14336"])
def test_variants_of_a_decode_case_launch_other_grids_than_tuned_and_each_other(case_id):
    case = TASK.case(case_id)
    p = case.params
    tuned = choose_config(H200, p["m"], p["n"], p["k"], __import__("torch").bfloat16)
    found = variants(case, H200)
    grids = [_grid(cfg, case, H200) for cfg in found.values()]
    assert _grid(tuned, case, H200) not in grids and len(set(grids)) == len(grids)
    assert found["t atomic"].atomic and found["t stream-k"].stream_k
    # both on 132 units: t splits 4 (M = 1: the GEMV mode, 32 tiles of 128 x 64 over 224 iterations, 128 programs;
    # M = 8: 16 x 128 x 128 tiles, BENCHMARKS.md tuned plan, offline compile: 128 programs)
    assert found["t 2x programs"].split_k == 8 and found["t s1 4x programs"].split_k == 16
    assert found["t s1 4x programs"].num_stages == 1 and found["t s1 4x programs evict"].evict_weights
    assert found["t atomic"].gemv == tuned.gemv == (p["m"] == 1)


def test_at_one_row_tuned_is_the_gemv_variant_and_the_tile_rule_is_timed_beside_it():
    case = TASK.case("m1-n4096-k14336")
    found = variants(case, H200)
    # "gemv 128x64 w8" and its s1 4x evict twin launch what t and "t s1 4x programs evict" launch: dropped
    assert "gemv 128x64 w8" not in found and "gemv 128x64 w8 s1 4x evict" not in found
    tiles = found["dot tiles"]
    assert not tiles.gemv and (tiles.block_m, tiles.block_n, tiles.block_k) == (16, 128, 128)
    assert "dot tiles" not in variants(TASK.case("m8-n4096-k14336"), H200)


#: Small test cases with M <= 16: odd N and K, a split, M = 1, float32.
SMALL = ["odd-3x13x37", "decode-1x80x257", "long-k-33x96x300"]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("case_id", ["odd-3x13x37", "decode-1x80x257"])
def test_every_variant_matches_the_reference(case_id, dtype, device):
    case = TASK.case(case_id)
    for name, cfg in variants(case, CHIP).items():
        check_impl(functools.partial(run_family, cfg, limits=CHIP), case, device, dtype=dtype)


@pytest.mark.parametrize("knobs", [dict(split_k=3, fused_reduce=True), dict(split_k=3), dict(split_k=3, atomic=True),
                                   dict(stream_k=True), dict(gemv=True, block_m=1, split_k=2, fused_reduce=True)],
                         ids=["fused", "workspace", "atomic", "stream-k", "gemv"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_evict_first_weights_in_every_schedule(knobs, dtype, device):
    from kernels.splitk_gemm.config import FamilyConfig

    tiles = dict(block_m=16, block_n=16, block_k=16)
    cfg = FamilyConfig(**{**tiles, **knobs, "evict_weights": True})
    check_impl(functools.partial(run_family, cfg, limits=CHIP), TASK.case("long-k-33x96x300"), device, dtype=dtype)


def test_run_checks_every_provider_and_times_dirty_and_clean(monkeypatch, device):
    """The sweep end to end on two small cases (interpreter), with the GPU timer replaced by one that records its
    L2 mode: every Triton variant's output checked and ok, the read of B not checked, both timings per row."""
    import kernels.timing
    from benchmarks.bench_splitk_gemm import check_output
    from kernels.splitk_gemm import splitk_gemm

    modes = []

    def fake_bench(fn, sets, reps, warmup, clean_l2):
        fn(**sets[0])
        modes.append(clean_l2)
        return type("T", (), {"median_us": 2.0 if clean_l2 else 3.0})()

    monkeypatch.setattr(kernels.timing, "bench", fake_bench)
    cases = [TASK.case("decode-1x80x257"), TASK.case("odd-3x13x37")]
    rows, order = run_m16(cases, CHIP, (1e15, 1e12), 1, 1e9, run_family, lambda a, b, c: c.copy_(a @ b.T),
                          functools.partial(splitk_gemm, limits=CHIP), check_output, device=device)
    assert [c.id for c in order] == [c.id for c in cases]
    names = {"cublas", "tuned", "ref:read-b", *variants(cases[0], CHIP)}
    assert {r["provider"] for r in rows if r["case"] == cases[0].id} == names
    assert all("error" not in r and r["dirty_us"] == 3.0 and r["clean_us"] == 2.0 for r in rows), rows
    assert all(r["ok"] for r in rows if r["provider"] != "ref:read-b")
    assert not any("ok" in r for r in rows if r["provider"] == "ref:read-b")
    assert modes.count(True) == modes.count(False) == len(rows)


def _row(case, provider, dirty, clean, ok=True, floor=10.0):
    return {"case": case, "provider": provider, "dirty_us": dirty, "clean_us": clean, "ok": ok, "max_err": 0.5,
            "floor_us": floor}


def test_table_ratios_floor_fractions_and_geomeans():
    rows = [_row("a", "cublas", 40.0, 30.0), _row("a", "tuned", 41.0, 29.0), _row("a", "t evict", 38.0, 32.0),
            _row("b", "cublas", 20.0, 16.0), _row("b", "tuned", 25.0, 16.0, floor=5.0),
            _row("b", "t evict", 10.0, 8.0, ok=False),  # a wrong output never counts
            {"case": "b", "provider": "ref:read-b", "dirty_us": 12.5, "clean_us": 10.0, "floor_us": 5.0}]
    table = m16_markdown(rows)
    # tuned on a: 40 / 41, floor 10 / 41 = 24 %; clean 30 / 29
    assert f"| a | tuned | 41.0 | 24% | {40 / 41:.3f}x | 29.0 | 34% | {30 / 29:.3f}x | ok |" in table
    assert "| b | t evict | 10.0 | 100% | - |" in table and "MISMATCH 0.5" in table
    assert "| b | ref:read-b | 12.5 | 40% | 1.600x | 10.0 | 50% | 1.600x | - |" in table
    tuned_dirty = math.sqrt(40 / 41 * 20 / 25)
    tuned_clean = math.sqrt(30 / 29 * 16 / 16)
    assert f"| tuned | {tuned_dirty:.3f}x | 0 of 2 | {tuned_clean:.3f}x | 1 of 2 |" in table
    assert f"| t evict | {40 / 38:.3f}x | 1 of 2 | {30 / 32:.3f}x | 0 of 2 |" in table
    assert "| ref:read-b |" not in table.split("| provider | vs cuBLAS")[1]
