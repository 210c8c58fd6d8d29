"""Case variables and helper functions of split-K GEMM for pattern formulas (the plug-in contract's
``FormulaVariables``: `VARIABLES`, `FUNCTIONS`, `case_values`, `bind`).

The catalog's formulas (kernels/splitk_gemm/catalog.yaml) read these next to the chip profile's and the diagnosis'
variables and the compulsory ``flops``, ``bytes`` and ``intensity`` every task has. The tuned values are the tuned
entry point's own tensor-core tile rule (`tuned.dot_config`, what `tuned.choose_config` runs at M >
`config.GEMV_OFFER_ROWS`; at fewer rows it runs the GEMV mode, `tuned.gemv_config`) and the modeled times the
family's own model (`schedule`), so the knowledge side budgets exactly what the kernel runs; a profile field they
need that is unknown fails the formula (knowledge.formula's UnknownValue), never a default.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from kernels.chip import ChipLimits
from kernels.splitk_gemm.common import DTYPES, Problem
from kernels.splitk_gemm.config import GEMV_MAX_ROWS, GEMV_OFFER_ROWS, FamilyConfig
from kernels.splitk_gemm.gemv_rule import choose_gemv_config
from kernels.splitk_gemm.schedule import stream_k_time, tile_count, tiles_time
from kernels.splitk_gemm.tuned import dot_config

VARIABLES: dict[str, str] = {
    "M": "rows of A and C (tokens of the batch)", "N": "rows of the weights B [N, K], columns of C",
    "K": "reduction length (columns of A and B)",
    "elem": "bytes per element of the case's dtype",
    "weight_bytes": "bytes of the weights B, N x K x elem (almost all of a skinny call's traffic)",
    "partial_bytes": "float32 partial bytes one split adds, written and read again: 8 x M x N",
    "gemv_max_rows": "most rows of A one GEMV-mode program multiplies (config.GEMV_MAX_ROWS)",
    "gemv_offer_rows": "most rows at which the GEMV mode is offered (config.GEMV_OFFER_ROWS)",
    "max_offset_elems": "largest element offset into A, B or C, max(M x K, N x K, M x N) (int32 overflows at 2**31)",
}

_LIMITS = "units, smem_kb, warp_size, max_threads"
FUNCTIONS: dict[str, str] = {
    **{f"tuned_{knob}": f"tuned_{knob}({_LIMITS}): the tuned entry point's tensor-core tile rule's {knob} for the "
       f"case on a chip with these limits (tuned.dot_config)" for knob in ("block_m", "block_n", "block_k",
                                                                          "num_stages", "num_warps")},
    "tuned_split_k": f"tuned_split_k({_LIMITS}): the tile rule's split count (family.auto_split_k; 1 under "
                     f"stream-K)",
    "tuned_stream_k": f"tuned_stream_k({_LIMITS}): 1 if the tile rule runs stream-K, else 0",
    **{f"gemv_{knob}": f"gemv_{knob}({_LIMITS}, bandwidth): the GEMV tile rule's {knob} for the case "
       f"(bandwidth in bytes/s; gemv_rule.choose_gemv_config)" for knob in ("block_n", "block_k", "num_stages",
                                                                          "num_warps")},
    "gemm_tiles": "gemm_tiles(block_m, block_n): output tiles cdiv(M, block_m) x cdiv(N, block_n)",
    "gemm_split_time": "gemm_split_time(units, block_m, block_n, block_k, splits): modeled time of the tile grid "
                       "at `splits` splits, in bytes of one unit's bandwidth share (schedule.tiles_time)",
    "gemm_stream_k_time": "gemm_stream_k_time(units, block_m, block_n, block_k): modeled time of stream-K, in "
                          "bytes of one unit's bandwidth share (schedule.stream_k_time)",
}


def _problem(case) -> Problem:
    p = case.params
    return Problem(int(p["m"]), int(p["n"]), int(p["k"]), DTYPES[str(p.get("dtype") or "bfloat16")])


def case_values(case) -> dict[str, Any]:
    """Values of `VARIABLES` for `case`.

    Raises:
        KeyError: the case lacks m, n or k.
    """
    prob = _problem(case)
    m, n, k = prob.m, prob.n, prob.k
    return {"M": m, "N": n, "K": k, "elem": prob.elem, "weight_bytes": n * k * prob.elem,
            "partial_bytes": 8 * m * n, "gemv_max_rows": GEMV_MAX_ROWS, "gemv_offer_rows": GEMV_OFFER_ROWS,
            "max_offset_elems": max(m * k, n * k, m * n)}


@lru_cache(maxsize=4096)
def _gemv(prob: Problem, units: int, smem_kb: float, warp: int, threads: int, bandwidth: float) -> FamilyConfig:
    return choose_gemv_config(prob, ChipLimits(units, smem_kb, warp, threads), bandwidth)


@lru_cache(maxsize=4096)
def _tuned(prob: Problem, units: int, smem_kb: float, warp: int, threads: int) -> FamilyConfig:
    return dot_config(ChipLimits(units, smem_kb, warp, threads), prob.m, prob.n, prob.k, prob.dtype)


def bind(case) -> dict[str, Callable[..., Any]]:
    """`FUNCTIONS` bound to `case`."""
    prob = _problem(case)

    def tuned(units: float, smem_kb: float, warp: float, threads: float) -> FamilyConfig:
        return _tuned(prob, int(units), float(smem_kb), int(warp), int(threads))

    def tiles(block_m: float, block_n: float, block_k: float = 64) -> FamilyConfig:
        return FamilyConfig(block_m=int(block_m), block_n=int(block_n), block_k=int(block_k))

    out: dict[str, Callable[..., Any]] = {
        f"tuned_{knob}": (lambda *limits, _k=knob: getattr(tuned(*limits), _k))
        for knob in ("block_m", "block_n", "block_k", "num_stages", "num_warps", "split_k")}
    for knob in ("block_n", "block_k", "num_stages", "num_warps"):
        out[f"gemv_{knob}"] = (lambda units, smem_kb, warp, threads, bandwidth, _k=knob: getattr(
            _gemv(prob, int(units), float(smem_kb), int(warp), int(threads), float(bandwidth)), _k))
    out["tuned_stream_k"] = lambda *limits: int(tuned(*limits).stream_k)
    out["gemm_tiles"] = lambda block_m, block_n: tile_count(tiles(block_m, block_n), prob)
    out["gemm_split_time"] = lambda units, block_m, block_n, block_k, splits: tiles_time(
        tiles(block_m, block_n, block_k), prob, int(splits), int(units))
    out["gemm_stream_k_time"] = lambda units, block_m, block_n, block_k: stream_k_time(
        tiles(block_m, block_n, block_k), prob, int(units))
    return out
