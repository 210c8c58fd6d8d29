"""The few-row split-K sweep (benchmarks/splitk_few_rows.py): its cases, bandwidth fractions and table (pure
functions of the rows; the timing itself runs on the GPU, suite splitk-gemv)."""

from __future__ import annotations

import math

import pytest

from benchmarks.splitk_few_rows import (
    FEW_ROWS_M,
    GEMV_VARIANTS,
    bandwidth_fractions,
    few_row_cases,
    few_rows_markdown,
)
from kernels.splitk_gemm.cases import BENCH_GRID
from kernels.splitk_gemm.spec import bytes_moved


def test_cases_cover_every_layer_at_every_m_smallest_first():
    cases = few_row_cases()
    layers = {(n, k) for n, k, _ in BENCH_GRID}
    assert len(cases) == len(FEW_ROWS_M) * len(layers) == 18
    assert {(c.params["m"], c.params["n"], c.params["k"]) for c in cases} == {
        (m, n, k) for m in (1, 2, 4) for n, k in layers}
    assert [c.params["m"] for c in cases] == sorted(c.params["m"] for c in cases)
    assert all(c.params["dtype"] == "bfloat16" for c in cases)
    assert all(cfg.gemv and cfg.split_k == 0 for cfg in GEMV_VARIANTS.values())


def test_bandwidth_fraction_is_bytes_over_time_over_bandwidth():
    case = few_row_cases()[0]  # m1-n4096-k4096: 2 * (4096 + 4096 * 4096 + 4096) bytes
    assert bytes_moved(case) == 2 * (4096 + 4096 * 4096 + 4096)
    gbps = bytes_moved(case) / 10.0 / 1e3  # at 10 us
    row = bandwidth_fractions({"gbps": gbps}, 4.8e12, 4.0e12)
    assert row["bw_fraction_spec"] == pytest.approx(bytes_moved(case) / 10e-6 / 4.8e12)
    assert row["bw_fraction_measured"] == pytest.approx(bytes_moved(case) / 10e-6 / 4.0e12)
    assert bandwidth_fractions({"gbps": gbps}, 4.8e12, None)["bw_fraction_measured"] is None


def _row(case, provider, time_us, ok=True):
    return {"case": case.id, "provider": provider, "time_us": time_us, "ok": ok, "bw_fraction_spec": 0.5}


def test_table_compares_the_best_gemv_variant_with_cublas_per_m():
    cases = few_row_cases()
    one = [c for c in cases if c.params["m"] == 1][:2]
    names = list(GEMV_VARIANTS)
    rows = [_row(one[0], "cublas", 10.0), _row(one[0], "tuned", 12.0), _row(one[0], names[0], 8.0),
            _row(one[0], names[1], 5.0, ok=False),  # a wrong output never counts as the fastest
            _row(one[1], "cublas", 20.0), _row(one[1], "tuned", 16.0), _row(one[1], names[2], 25.0)]
    table = few_rows_markdown(rows, cases)
    assert f"| {one[0].id} |" in table and "MISMATCH" in table and "| 1.250x |" in table
    gemv = math.sqrt(10 / 8 * 20 / 25)
    tuned = math.sqrt(10 / 12 * 20 / 16)
    best = math.sqrt(10 / 8 * 20 / 16)
    assert f"| 1 | {gemv:.3f}x | {tuned:.3f}x | {best:.3f}x | 2 of 2 |" in table
    assert "| 2 |" not in table  # cases never timed (budget) leave no row


def test_rule_stages_keep_the_bytes_in_flight_within_shared_memory():
    """m1-n4096-k4096, 128 x 64 bf16 weight tiles at one row: a stage weighs 128*64*2 + 0.5*64*2 = 16448 bytes,
    so 96 KiB in flight needs 1 + ceil(98304 / 16448) = 7 stages, capped at the family's 6 (and 227 KiB holds
    227 // 16.125 = 14); a 48 KiB chip holds 48 // 16.125 = 2. Fixed-stage variants keep theirs."""
    from benchmarks.splitk_few_rows import variant_config
    from kernels.chip import ChipLimits

    case = few_row_cases()[0]
    big = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
    small = ChipLimits(num_compute_units=36, smem_per_block_kb=48.0, warp_size=32, max_threads_per_block=1024)
    assert variant_config("gemv 128x64 w8 stages=rule", case, big).num_stages == 6
    assert variant_config("gemv 128x64 w8 stages=rule", case, small).num_stages == 2
    assert variant_config("gemv 32x256 w4 s3", case, small) == GEMV_VARIANTS["gemv 32x256 w4 s3"]


def test_rule_variant_is_the_gemv_tile_rule_per_row_count():
    """At 4.8 TB/s on 132 units (90.9 KB in flight per unit): at most 32 accumulator elements per thread of 8 warps
    (256 threads) is a 128 x 64 tile at one row, 64 x 64 at two, 32 x 64 at four (rows x BLOCK_N x BLOCK_K / 256);
    stages 1 + ceil(90909 / tile bytes), at most 6. Without a bandwidth the variant is an error."""
    from benchmarks.splitk_few_rows import variant_config
    from kernels.chip import ChipLimits

    h200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
    by_id = {c.id: c for c in few_row_cases()}
    got = {m: variant_config("gemv rule", by_id[f"m{m}-n4096-k14336"], h200, 4.8e12) for m in (1, 2, 4)}
    assert {m: (c.block_n, c.block_k, c.num_warps, c.num_stages) for m, c in got.items()} == {
        1: (128, 64, 8, 6), 2: (64, 64, 8, 6), 4: (32, 64, 8, 6)}
    assert all(c.gemv and c.split_k == 0 and c.fused_reduce for c in got.values())
    with pytest.raises(ValueError, match="bandwidth"):
        variant_config("gemv rule", by_id["m1-n4096-k14336"], h200)
