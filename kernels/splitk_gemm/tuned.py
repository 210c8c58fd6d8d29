"""The optimized entry point: picks a `FamilyConfig` from the chip limits and the call's sizes.

The rules are written over quantities of the call (M, N, K, dtype) and of the chip (compute units, shared memory
per block, threads per block), never over benchmark case names. The chip limits are an explicit object built from
the chip profile (`set_chip_limits` or the `limits` argument); nothing is read from the device.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
import triton

from kernels.splitk_gemm.common import Problem, check_inputs, limits_key, require_limit
from kernels.splitk_gemm.config import FamilyConfig, fit_to_limits
from kernels.splitk_gemm.family import run_family
from kernels.splitk_gemm.schedule import (
    auto_split_k,
    k_iterations,
    split_candidates,
    stream_k_time,
    tile_count,
    tiles_time,
)

#: Stream-K replaces the split tile grid only where its modeled time is below this fraction of the grid's (a
#: margin for what the model leaves out: the fix-up's serial reads and the longer per-program bookkeeping).
STREAM_K_BELOW = 0.9

_CHIP_LIMITS: list[Any] = [None]
_CHOSEN: dict[tuple, FamilyConfig] = {}


def set_chip_limits(limits: Any) -> None:
    """Chip limits used by `splitk_gemm` calls that pass none: any object with the attributes num_compute_units,
    smem_per_block_kb, warp_size, max_threads_per_block (from the chip profile; None = unknown). None clears."""
    _CHIP_LIMITS[0] = limits


def choose_config(limits: Any, m: int, n: int, k: int, dtype: torch.dtype) -> FamilyConfig:
    """Family configuration for a call A [m, k] @ B[n, k]^T of `dtype` on a chip with `limits`.

    - BLOCK_M: the smallest power of two >= M in 16..128, so one row block covers M <= 128 and every B tile is
      read from device memory once (B, N x K, is almost all of the traffic of a skinny call).
    - 16-bit inputs, BLOCK_M <= 64: 128 x 128 B tiles (BLOCK_N x BLOCK_K), 4 warps, 4 stages, i.e. three 32 KiB B
      tiles in flight per program: a memory-bound program needs about bandwidth x latency / compute units bytes in
      flight to reach its share of the bandwidth (H200: 4.8 TB/s x ~1 us / 132 ~ 36 KB). BLOCK_M = 128: BLOCK_K 64
      and 8 warps (a 128 x 128 float32 accumulator over 256 threads), 4 stages.
    - float32: the capped tiles of `common.FLOAT32_TILE_CAP`.
    - BLOCK_K halved (down to 32) while tiles x the most splits allowed (`split_candidates`: >= 4 K-iterations
      each) cannot fill the compute units: small layers (e.g. a 1408 x 2048 MoE expert, 11 tiles of 128 columns)
      need shorter K-iterations to split further.
    - split_k from `auto_split_k`: tiles x splits fill the compute units when the tiles alone do not (skinny M,
      few N tiles, long K), one split when they do; the partials are summed by the last program of each tile in a
      fixed order (``fused_reduce=True``: deterministic, one launch).
    - stream-K instead where `stream_k_time` < `STREAM_K_BELOW` x `tiles_time` at that split: grids of one to a
      few waves whose last wave runs mostly empty (e.g. 1.7 waves of tiles), which no split evens out cheaply.
    - GROUP_M 8 (L2 reuse of B tiles across row blocks when M > BLOCK_M).
    All of it fitted to the chip's shared memory and thread limits (`fit_to_limits`).
    Source: a priori rules from the roofline of skinny GEMMs (intensity ~ M FLOP/byte, below the ridge point of
    current GPUs for M <= 128), not yet measured: benchmarks/bench_splitk_gemm.py --sweep measures them.

    Raises:
        ValueError: a limit the rules need is unknown (None) in `limits`.
    """
    prob = Problem(m, n, k, dtype)
    block_m = min(128, max(16, triton.next_power_of_2(max(m, 1))))
    if block_m <= 64:
        config = FamilyConfig(block_m=block_m, block_n=128, block_k=128, num_warps=4, num_stages=4)
    else:
        config = FamilyConfig(block_m=block_m, block_n=128, block_k=64, num_warps=8, num_stages=4)
    config = fit_to_limits(replace(config, fused_reduce=True, group_m=8), prob, limits)
    units = int(require_limit(limits, "num_compute_units"))
    while config.block_k > 32 and tile_count(config, prob) * max(split_candidates(config, prob)) < units:
        config = replace(config, block_k=config.block_k // 2)
    splits = auto_split_k(config, prob, limits)
    if k_iterations(config, prob) > 0 and (
            stream_k_time(config, prob, units) < STREAM_K_BELOW * tiles_time(config, prob, splits, units)):
        return replace(config, stream_k=True)
    return replace(config, split_k=splits)


def splitk_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, limits: Any = None) -> torch.Tensor:
    """Optimized ``c = a @ b.T``; same arguments, semantics and errors as the baseline
    (`kernels.splitk_gemm.baseline.splitk_gemm`). Writes `c` in place and returns it.

    Shapes: a [M, K], b [N, K] (``torch.nn.Linear`` weight layout), c [M, N]; one dtype (float16, bfloat16, or
    float32 with IEEE float32 dots); float32 accumulation, one rounding to c's dtype. Deterministic: two calls on the
    same inputs give bitwise equal outputs. `limits` (default: those of `set_chip_limits`) are the chip's limits.

    Raises:
        ValueError: wrong rank, shape, dtype or device; no chip limits, or one the rules need is unknown.
    """
    prob = check_inputs(a, b, c)
    if prob.m == 0 or prob.n == 0:
        return c
    limits = limits if limits is not None else _CHIP_LIMITS[0]
    key = (limits_key(limits), prob)
    config = _CHOSEN.get(key)
    if config is None:
        config = _CHOSEN[key] = choose_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    return run_family(config, a, b, c, limits=limits)
