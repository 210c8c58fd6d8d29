"""Split-K GEMM at M <= 16 on the GPU: streaming-read variants of the family beside cuBLAS and the tuned plan.

For the bench cases with M <= `MAX_M` (bf16; the issue's "faster than cuBLAS" set first, `PRIORITY`), every
provider's output is checked against the float64 reference (`spec.reference`), then timed twice by
`kernels.timing.bench`: after the usual write flush of L2 ("dirty": the L2 full of the flush's dirty lines, whose
write-back the call pays) and after a write-then-read flush ("clean", ``clean_l2``). Each time is printed with its
fraction of the spec-bandwidth floor (bytes / `mem_bw_gbps`) and its ratio to cuBLAS timed the same way. Providers:
cuBLAS, the tuned entry point, a plain read of the weights (``ref:read-b``, ``b.sum()``: what one pass over B costs
under the same flush; not checked) and the `variants` of `FamilyConfig`. A time budget ends the sweep early,
keeping what it measured. Run through ``benchmarks/bench_splitk_gemm.py --m16``.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from kernels.splitk_gemm.common import DTYPES, Problem
from kernels.splitk_gemm.config import GEMV_OFFER_ROWS, MAX_SPLIT_K, FamilyConfig
from kernels.splitk_gemm.family import plan_launch
from kernels.splitk_gemm.schedule import pipeline_stages
from kernels.splitk_gemm.tuned import choose_config, dot_config
from kernels.task import Case

MAX_M = 16
#: Cases timed first (the M <= 16 cases of `chiplore optimize splitk_gemm`'s bench), then the other bench cases.
PRIORITY = ("m1-n4096-k14336", "m8-n4096-k14336", "m16-n14336-k4096")
#: Fixed weight tiles (BLOCK_N, BLOCK_K, num_warps, num_stages) of the deep-pipeline variants at BLOCK_M 16: 40-74 KB
#: of bf16 weights and rows per stage, 160-221 KB per program (H200: 227 KB per block), so one program per SM keeps
#: 2-3 stages of 32-64 KB weight tiles in flight (t with 6 stages is ``t stages=6``). Shrunk by `fit_to_limits` where
#: a chip has less shared memory.
DEEP_TILES = ((64, 256, 4, 4), (256, 128, 8, 3), (128, 256, 8, 3))


def variants(case: Case, limits) -> dict[str, FamilyConfig]:
    """Name -> `FamilyConfig` of the variants timed on `case`, each derived from the tuned configuration t
    (`tuned.choose_config`; `splits` its effective split count; at M <= `config.GEMV_OFFER_ROWS` t is the GEMV
    mode) or fixed tiles. A variant that launches what t or an earlier variant launches (`family.plan_launch`, the
    explicit split count and split_k = 0 compared by the grid they launch) is dropped:

    - ``t atomic``: t with float32 atomics (one launch, no partial reads; the non-deterministic mode, opt-in only);
    - ``t 2x programs``: t with 2 x splits (more programs than compute units);
    - ``t stream-k``: t's tiles on the persistent stream-K grid (one program per compute unit);
    - ``t stages=6``: t with 6 pipeline stages where its shared memory allows (more bytes in flight);
    - ``16xNxK wW sS``: the `DEEP_TILES`, split by the family's rule, fused reduction;
    - ``t s1 4x programs`` and ``t s1 4x programs evict``: t without software pipelining (weights loaded into
      registers, num_stages 1) and 4 x splits, so bytes in flight come from several programs per compute unit;
      the second with evict-first weights, which reach the PTX only on such register loads (``ld.global
      .L2::cache_hint`` with an ``L2::evict_first`` policy; Triton 3.6 drops the hint on the ``cp.async`` copies of
      pipelined loads: `offline_compile` PTX of both);
    - at M <= `config.GEMV_OFFER_ROWS`: ``dot tiles`` (the tensor-core tile rule, `tuned.dot_config`, which t
      replaced there), ``gemv 128x64 w8`` (the GEMV mode's fastest tile at M = 1, BENCHMARKS.md few-row sweep,
      stages by the family's rule: what t launches, so dropped while the rule is t's) and ``gemv 128x64 w8 s1 4x
      evict`` (register loads, 4 x splits, evict-first weights).
    """
    p = case.params
    prob = Problem(p["m"], p["n"], p["k"], DTYPES[p["dtype"]])
    t = choose_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    grid = replace(t, stream_k=False)
    splits = plan_launch(grid, prob, limits).splits
    out = {
        "t atomic": replace(grid, atomic=True),
        "t 2x programs": replace(grid, split_k=min(MAX_SPLIT_K, 2 * splits)),
        "t stream-k": replace(t, stream_k=True),
        "t stages=6": replace(t, num_stages=6),
    }
    for block_n, block_k, warps, stages in DEEP_TILES:
        out[f"16x{block_n}x{block_k} w{warps} s{stages}"] = FamilyConfig(
            block_m=16, block_n=block_n, block_k=block_k, num_warps=warps, num_stages=stages, split_k=0,
            fused_reduce=True)
    registers = replace(grid, num_stages=1, split_k=min(MAX_SPLIT_K, 4 * splits))
    out["t s1 4x programs"] = registers
    out["t s1 4x programs evict"] = replace(registers, evict_weights=True)
    if prob.m <= GEMV_OFFER_ROWS:
        out["dot tiles"] = dot_config(limits, prob.m, prob.n, prob.k, prob.dtype)
        gemv = FamilyConfig(block_m=16, block_n=128, block_k=64, num_warps=8, split_k=0, fused_reduce=True, gemv=True)
        gemv_splits = plan_launch(gemv, prob, limits).splits
        rows = replace(gemv, block_m=1)
        out["gemv 128x64 w8"] = replace(gemv, num_stages=pipeline_stages(rows, prob, limits.smem_per_block_kb))
        out["gemv 128x64 w8 s1 4x evict"] = replace(gemv, num_stages=1, evict_weights=True,
                                                    split_k=min(MAX_SPLIT_K, 4 * gemv_splits))
    seen, unique = {_launch(t, prob, limits)}, {}
    for name, cfg in out.items():
        launch = _launch(cfg, prob, limits)
        if launch not in seen:
            seen.add(launch)
            unique[name] = cfg
    return unique


def _launch(config: FamilyConfig, prob: Problem, limits):
    """`family.plan_launch` of `config` with its config's split_k set to 0: the grid decides, not how it was asked
    for (an explicit count and split_k = 0 that sizes the same one launch alike)."""
    plan = plan_launch(config, prob, limits)
    return replace(plan, config=replace(plan.config, split_k=0))


def m16_cases(all_cases) -> list[Case]:
    """The cases of `all_cases` with M <= `MAX_M`, those of `PRIORITY` first (in its order)."""
    small = [c for c in all_cases if c.params["m"] <= MAX_M]
    rank = {cid: i for i, cid in enumerate(PRIORITY)}
    return sorted(small, key=lambda c: rank.get(c.id, len(rank)))


def floor_us(case: Case, peaks: tuple[float, float], bytes_moved, flops) -> float:
    """Roofline floor in microseconds: max(flops / peak, bytes / spec bandwidth)."""
    return max(flops(case) / peaks[0], bytes_moved(case) / peaks[1]) * 1e6


def time_row(name: str, fn, sets: list, expected, reps: int, check) -> dict[str, Any]:
    """Check `fn` once (`check(fn, args, expected)` -> (ok, max error); `expected` None: not checked), then its
    median time after a dirty and after a clean L2 flush; a failure is recorded in the row, not raised."""
    from kernels.timing import bench

    row: dict[str, Any] = {"provider": name}
    try:
        if expected is not None:
            row["ok"], row["max_err"] = check(fn, sets[0], expected)
        for label, clean in (("dirty", False), ("clean", True)):
            row[f"{label}_us"] = bench(fn, sets, reps=reps, warmup=3, clean_l2=clean).median_us
    except Exception as exc:  # noqa: BLE001 - a provider failing on a case is reported, not fatal
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def run_m16(all_cases, limits, peaks: tuple[float, float], reps: int, budget_s: float, run_family, cublas, tuned,
            check, device: str = "cuda", progress=None) -> tuple[list[dict[str, Any]], list[Case]]:
    """Rows (one per case and provider) and the cases in order; starts no case after `budget_s` seconds.

    `run_family(config, a, b, c, limits=)`, `cublas` and `tuned` (``fn(a, b, c)``) are the entry points; `check`
    the bench's `check_output`; inputs on `device`; `progress(rows)`, if given, is called after each case (to save
    what was measured before a time limit ends the process).
    """
    import torch

    from kernels.splitk_gemm.spec import bytes_moved, flops, make_inputs, reference

    cases, rows, start = m16_cases(all_cases), [], time.time()
    for case in cases:
        if time.time() - start > budget_s:
            print(f"budget of {budget_s:.0f}s spent: {case.id} and later cases skipped", flush=True)
            break
        sets = [make_inputs(case, 1000 + i, device) for i in range(2)]
        expected = reference(sets[0])["c"]
        configs = variants(case, limits)
        named = {"cublas": (cublas, expected), "tuned": (tuned, expected),
                 "ref:read-b": (lambda a, b, c: b.sum(dtype=torch.float32), None),
                 **{name: ((lambda a, b, c, _cfg=cfg: run_family(_cfg, a, b, c, limits=limits)), expected)
                    for name, cfg in configs.items()}}
        floor = floor_us(case, peaks, bytes_moved, flops)
        for name, (fn, want) in named.items():
            row = time_row(name, fn, sets, want, reps, check)
            row.update(case=case.id, floor_us=floor)
            if name in configs:
                row["config"] = configs[name].to_dict()
            rows.append(row)
        del sets, expected
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        if progress is not None:
            progress(rows)
        print(f"benched {case.id} at {time.time() - start:.0f}s", flush=True)
    return rows, cases


def _ratio(row: dict[str, Any], cublas: dict[str, Any], label: str) -> float:
    key = f"{label}_us"
    if key not in row or key not in cublas or not row.get("ok", True):
        return math.nan
    return cublas[key] / row[key]


def _cells(row: dict[str, Any], cublas: dict[str, Any], label: str) -> str:
    key = f"{label}_us"
    if key not in row:
        return f"{row.get('error', 'skipped')[:40]} | - | -"
    ratio = _ratio(row, cublas, label)
    return f"{row[key]:.1f} | {100 * row['floor_us'] / row[key]:.0f}% | " + ("-" if ratio != ratio else f"{ratio:.3f}x")


def _geomean(values: list[float]) -> float:
    good = [v for v in values if v == v and v > 0]
    return math.exp(sum(map(math.log, good)) / len(good)) if good else math.nan


def m16_markdown(rows: list[dict[str, Any]]) -> str:
    """Per case and provider: median us, % of the spec-bandwidth floor and ratio to cuBLAS (cuBLAS time / this
    time; > 1 is faster) after a dirty and after a clean L2 flush, and whether the output matched; then per provider
    the geomean ratio to cuBLAS over the cases it was timed on and the count of cases where it is faster."""
    lines = ["| case | provider | dirty L2 us | % floor | vs cuBLAS | clean L2 us | % floor | vs cuBLAS | output |",
             "|---|---|---|---|---|---|---|---|---|"]
    by_case: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_case.setdefault(row["case"], {})[row["provider"]] = row
    per_provider: dict[str, list[tuple[float, float]]] = {}
    for case_id, named in by_case.items():
        cublas = named.get("cublas", {})
        for name, row in named.items():
            out = "-" if "ok" not in row else ("ok" if row["ok"] else f"MISMATCH {row['max_err']:.3g}")
            lines.append(f"| {case_id} | {name} | {_cells(row, cublas, 'dirty')} | {_cells(row, cublas, 'clean')} "
                         f"| {out} |")
            if name != "cublas" and not name.startswith("ref:"):
                per_provider.setdefault(name, []).append((_ratio(row, cublas, "dirty"),
                                                          _ratio(row, cublas, "clean")))
    lines += ["", "| provider | vs cuBLAS dirty (geomean) | faster, dirty | vs cuBLAS clean (geomean) | faster, clean |",
              "|---|---|---|---|---|"]
    for name, ratios in per_provider.items():
        dirty, clean = [r[0] for r in ratios], [r[1] for r in ratios]
        lines.append(f"| {name} | {_geomean(dirty):.3f}x | {sum(v > 1 for v in dirty)} of {len(ratios)} "
                     f"| {_geomean(clean):.3f}x | {sum(v > 1 for v in clean)} of {len(ratios)} |")
    return "\n".join(lines)
