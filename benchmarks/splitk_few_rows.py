"""Few-row split-K GEMM on the GPU: the GEMV mode's variants, the tuned entry point and cuBLAS side by side.

For M in `FEW_ROWS_M` on every N x K layer of the bench (`kernels.splitk_gemm.cases.BENCH_GRID`), bf16: the median
GPU time of cuBLAS (``torch.matmul``), of the tuned entry point (the GEMV mode at M <= `config.GEMV_OFFER_ROWS`,
``tl.dot`` tiles at more rows) and of each `GEMV_VARIANTS`
configuration (``FamilyConfig.gemv``: vector-unit product, split by the family's rule), each output checked against
the float64 reference first, with its bandwidth fraction: compulsory bytes / time / the profile's spec bandwidth
(and / its measured bandwidth where the profile holds one). A time budget (``--budget-s``) ends the sweep early,
keeping what it measured. Run through ``benchmarks/bench_splitk_gemm.py --few-rows``.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from kernels.splitk_gemm.cases import BENCH_GRID, case_class, full_params
from kernels.splitk_gemm.common import DTYPES, Problem
from kernels.splitk_gemm.config import FamilyConfig, gemv_rows
from kernels.splitk_gemm.gemv_rule import choose_gemv_config
from kernels.splitk_gemm.schedule import pipeline_stages
from kernels.task import Case

#: Rows of the sweep: one row (where the GEMV mode is offered) and the 2 and 4 rows of the element-wise several-rows
#: accumulator (`common.gemv_tile`); M = 8 and 16 measured 7-20x slower than cuBLAS and are left out.
FEW_ROWS_M = (1, 2, 4)
_GEMV = dict(block_m=16, gemv=True, split_k=0, fused_reduce=True)
#: GEMV-mode configurations timed per case (BLOCK_M 16: rows per program min(16, pow2(M), GEMV_MAX_ROWS)).
#: "gemv rule" is, per case, the GEMV tile rule's choice (`gemv_rule.choose_gemv_config` at the profile's bandwidth:
#: what the catalog's gemv_stream pattern proposes); those named "stages=rule" get the family's bytes-in-flight
#: stage rule (`variant_config`). 128x64 w8 and 32x256 w4 s3 were the sweep's best; 64x128 at 8 warps and at 3
#: stages separate the tile shape from the warps and stages of the 64x128 w4 tile that measured 1.5x slower.
GEMV_VARIANTS: dict[str, FamilyConfig] = {
    "gemv rule": FamilyConfig(**_GEMV),
    "gemv 128x64 w8 stages=rule": FamilyConfig(block_n=128, block_k=64, num_warps=8, **_GEMV),
    "gemv 32x256 w4 s3": FamilyConfig(block_n=32, block_k=256, num_warps=4, num_stages=3, **_GEMV),
    "gemv 64x128 w8 stages=rule": FamilyConfig(block_n=64, block_k=128, num_warps=8, **_GEMV),
    "gemv 64x128 w4 s3": FamilyConfig(block_n=64, block_k=128, num_warps=4, num_stages=3, **_GEMV),
}


def variant_config(name: str, case: Case, limits, bandwidth: float | None = None) -> FamilyConfig:
    """`GEMV_VARIANTS[name]` for `case`: "gemv rule" the GEMV tile rule's configuration at `bandwidth` (bytes/s,
    the profile's; required for it), "stages=rule" variants with `schedule.pipeline_stages` of their tiles at the
    case's GEMV rows (`config.gemv_rows`) within the chip's smem_per_block_kb.

    Raises:
        ValueError: "gemv rule" without a bandwidth.
    """
    config = GEMV_VARIANTS[name]
    p = case.params
    prob = Problem(p["m"], p["n"], p["k"], DTYPES[p["dtype"]])
    if name == "gemv rule":
        if not bandwidth:
            raise ValueError("variant 'gemv rule' needs the chip's bandwidth (bytes/s)")
        return choose_gemv_config(prob, limits, bandwidth)
    if "stages=rule" not in name:
        return config
    rows = replace(config, block_m=gemv_rows(config.block_m, prob.m))
    return replace(config, num_stages=pipeline_stages(rows, prob, limits.smem_per_block_kb))


def few_row_cases() -> list[Case]:
    """Cases ``m{M}-n{N}-k{K}`` for M in `FEW_ROWS_M` (outer, ascending: the smallest M first under a budget) and
    every bench layer N x K, bf16, unit scales."""
    layers = [(n, k) for n, k, _ in BENCH_GRID]
    return [Case(f"m{m}-n{n}-k{k}", full_params(dict(m=m, n=n, k=k)), 300 + i, case_class(m))
            for i, (m, (n, k)) in enumerate((m, layer) for m in FEW_ROWS_M for layer in layers)]


def bandwidth_fractions(row: dict[str, Any], spec_bw: float, measured_bw: float | None) -> dict[str, Any]:
    """`row`'s achieved bytes/s (its ``gbps``) over the spec and the measured bandwidth (bytes/s; None: unknown)."""
    if "gbps" not in row:
        return row
    achieved = row["gbps"] * 1e9
    return {**row, "bw_fraction_spec": achieved / spec_bw,
            "bw_fraction_measured": achieved / measured_bw if measured_bw else None}


def _cell(row: dict[str, Any]) -> str:
    if "time_us" not in row:
        return row.get("error", "skipped")[:30]
    flag = "" if row.get("ok") else " MISMATCH"
    return f"{row['time_us']:.1f} ({100 * row['bw_fraction_spec']:.0f}%){flag}"


def _geomean(values: list[float]) -> float:
    good = [v for v in values if v == v and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else math.nan


def _time(row: dict[str, Any]) -> float:
    return row["time_us"] if "time_us" in row and row.get("ok") else math.nan


def few_rows_markdown(rows: list[dict[str, Any]], cases: list[Case]) -> str:
    """Table case | cuBLAS | tuned | each GEMV variant (median us, % of spec bandwidth) | best GEMV vs cuBLAS, then
    per M the geomeans over the layers against cuBLAS and the count of layers where a Triton variant is faster."""
    by = {(r["case"], r["provider"]): r for r in rows}
    names = ["cublas", "tuned", *GEMV_VARIANTS]
    lines = ["| case | " + " | ".join(names) + " | best gemv vs cuBLAS |", "|---" * (len(names) + 2) + "|"]
    per_m: dict[int, list[tuple[float, float, float]]] = {}
    for case in cases:
        cells = {name: by.get((case.id, name), {}) for name in names}
        if not any("time_us" in r for r in cells.values()):
            continue
        cublas = _time(cells["cublas"])
        gemv = min((_time(cells[n]) for n in GEMV_VARIANTS), default=math.nan, key=lambda t: (t != t, t))
        per_m.setdefault(case.params["m"], []).append((cublas / gemv, cublas / _time(cells["tuned"]),
                                                       cublas / min(gemv, _time(cells["tuned"]))))
        lines.append(f"| {case.id} | " + " | ".join(_cell(cells[n]) for n in names) + f" | {cublas / gemv:.3f}x |")
    lines += ["", "| M | best gemv vs cuBLAS (geomean) | tuned vs cuBLAS | best Triton vs cuBLAS | layers faster |",
              "|---|---|---|---|---|"]
    for m, ratios in sorted(per_m.items()):
        faster = sum(best > 1.0 for _, _, best in ratios)
        lines.append(f"| {m} | {_geomean([r[0] for r in ratios]):.3f}x | {_geomean([r[1] for r in ratios]):.3f}x "
                     f"| {_geomean([r[2] for r in ratios]):.3f}x | {faster} of {len(ratios)} |")
    return "\n".join(lines)


def run_few_rows(limits, peaks: tuple[float, float], measured_bw: float | None, reps: int, budget_s: float,
                 timer, run_family, cublas, tuned) -> tuple[list[dict[str, Any]], list[Case]]:
    """Rows (one per case and provider) of the sweep, the cases in order; stops starting cases after `budget_s`.

    `timer(name, fn, sets, case, expected, peaks, reps)` is the bench's `time_provider`; `run_family`, `cublas` and
    `tuned` the entry points (``fn(a, b, c)``).
    """
    import torch

    from kernels.splitk_gemm.spec import make_inputs, reference

    cases, rows, start = few_row_cases(), [], time.time()
    for case in cases:
        if time.time() - start > budget_s:
            print(f"budget of {budget_s:.0f}s spent: {case.id} and later cases skipped", flush=True)
            break
        sets = [make_inputs(case, 1000 + i, "cuda") for i in range(2)]
        expected = reference(sets[0])["c"]
        configs = {name: variant_config(name, case, limits, peaks[1]) for name in GEMV_VARIANTS}
        named = {"cublas": cublas, "tuned": tuned,
                 **{name: (lambda a, b, c, _cfg=cfg: run_family(_cfg, a, b, c, limits=limits))
                    for name, cfg in configs.items()}}
        for name, fn in named.items():
            row = bandwidth_fractions(timer(name, fn, sets, case, expected, peaks, reps), peaks[1], measured_bw)
            rows.append({**row, "config": configs[name].to_dict()} if name in configs else row)
        del sets, expected
        torch.cuda.empty_cache()
        print(f"benched {case.id} at {time.time() - start:.0f}s", flush=True)
    return rows, cases
