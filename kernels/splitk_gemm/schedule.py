"""The schedule model of the family: tiles, K-iterations, splits, program counts, and the split-K rule.

Times are modeled in K-iterations of one program (one BLOCK_N x BLOCK_K B tile and its A tile loaded and
multiplied) for memory-bound calls, each compute unit running one program at a time at its 1/units share of the
bandwidth (skinny GEMMs: intensity ~ M FLOP/byte, below the ridge point of current GPUs for M <= 128).
"""

from __future__ import annotations

import math
from typing import Any

import triton

from kernels.splitk_gemm.common import Problem, require_limit
from kernels.splitk_gemm.config import MAX_SPLIT_K, FamilyConfig

#: Fewest K-iterations (of BLOCK_K) a split keeps, so each program still pipelines its loads.
MIN_ITERS_PER_SPLIT = 4
#: Elements of the float32 partials kept below 2**31 (32-bit offsets inside the reduction loops).
MAX_PARTIAL_ELEMS = 2**31 - 1


def k_iterations(config: FamilyConfig, prob: Problem) -> int:
    """BLOCK_K steps over K: cdiv(K, BLOCK_K)."""
    return triton.cdiv(prob.k, config.block_k)


def tile_count(config: FamilyConfig, prob: Problem) -> int:
    """Output tiles: cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)."""
    return triton.cdiv(prob.m, config.block_m) * triton.cdiv(prob.n, config.block_n)


def effective_splits(requested: int, iterations: int) -> tuple[int, int]:
    """(splits, K-iterations per split) for `requested` splits of `iterations`: chunks of cdiv(iterations,
    requested), so no split is empty (e.g. 32 iterations in 6 requested splits: 6 chunks of 6, the last of 2)."""
    if iterations <= 0 or requested <= 1:
        return 1, max(iterations, 0)
    per_split = triton.cdiv(iterations, requested)
    return triton.cdiv(iterations, per_split), per_split


#: K-iterations a program spends before its first tile arrives and on its epilogue: about one DRAM latency, which
#: is about one B tile's transfer at a unit's bandwidth share (H200: 32 KiB / (4.8 TB/s / 132) ~ 0.9 us).
FILL_ITERS = 1.0


def partial_iters(config: FamilyConfig, prob: Problem) -> float:
    """Time of writing (or reading) one float32 partial tile, in K-iterations: min(M, BLOCK_M) x BLOCK_N x 4 bytes
    over one iteration's loads, (min(M, BLOCK_M) + BLOCK_N) x BLOCK_K x elem (rows past M are not stored)."""
    rows = min(prob.m, config.block_m)
    return rows * config.block_n * 4 / ((rows + config.block_n) * config.block_k * prob.elem)


def tiles_time(config: FamilyConfig, prob: Problem, splits: int, units: int) -> float:
    """Modeled time of the tile schedule at `splits`, in K-iterations: waves x (iterations per split + FILL_ITERS
    [+ one partial write]) [+ the last program's read of `splits` partials]; waves = ceil(tiles x splits / units)."""
    iterations = k_iterations(config, prob)
    splits, per_split = effective_splits(splits, iterations)
    waves = math.ceil(tile_count(config, prob) * splits / units)
    if splits == 1:
        return waves * (iterations + FILL_ITERS)
    w = partial_iters(config, prob)
    return waves * (per_split + FILL_ITERS + w) + splits * w


def stream_k_time(config: FamilyConfig, prob: Problem, units: int) -> float:
    """Modeled time of the stream-K schedule, in K-iterations: one equal share of tiles x iterations per program,
    FILL_ITERS and a partial write per tile segment of a share, and the fix-up read of a tile's contributors."""
    iterations = k_iterations(config, prob)
    total = tile_count(config, prob) * iterations
    if total == 0:
        return 0.0
    programs = stream_k_programs(total, units)
    share = math.ceil(total / programs)
    segments = math.ceil(share / iterations) + 1
    contributors = math.ceil(iterations / share) + 1
    w = partial_iters(config, prob)
    return share + segments * (FILL_ITERS + w) + contributors * w


def stream_k_programs(total_iterations: int, units: int) -> int:
    """Stream-K programs for `total_iterations` (tiles x K-iterations) on `units` compute units: one per unit,
    fewer where a share would drop below `MIN_ITERS_PER_SPLIT` iterations; never more than the iterations (every
    program's share is then non-empty, which the kernel's fix-up count relies on)."""
    return max(1, min(units, total_iterations // MIN_ITERS_PER_SPLIT))


def split_candidates(config: FamilyConfig, prob: Problem) -> list[int]:
    """Split counts the rule considers: 1, and each effective count of 2..`MAX_SPLIT_K` requested splits that keeps
    >= `MIN_ITERS_PER_SPLIT` iterations per split and the float32 partials under `MAX_PARTIAL_ELEMS`."""
    iterations = k_iterations(config, prob)
    most = min(MAX_SPLIT_K, iterations // MIN_ITERS_PER_SPLIT, MAX_PARTIAL_ELEMS // max(1, prob.m * prob.n))
    found = [1]
    for requested in range(2, most + 1):
        splits = effective_splits(requested, iterations)[0]
        if splits not in found:
            found.append(splits)
    return found


#: A split count is taken only if its modeled time beats every smaller count's by more than this fraction (the
#: model leaves out the partials' reduction launch and L2 traffic; near-ties keep fewer splits).
SPLIT_MARGIN = 0.05


def auto_split_k(config: FamilyConfig, prob: Problem, limits: Any) -> int:
    """Split-K factor of a call: the fewest splits among `split_candidates` whose `tiles_time` on the chip's compute
    units is within `SPLIT_MARGIN` of the least. Skinny calls (few tiles, long K) split until tiles x splits fill
    the units; a grid that fills them keeps one split unless splitting evens out its last wave by more than the
    extra program starts and partials cost.
    Source: split-K as in CUTLASS's split-K GEMMs and flash-decoding (split the reduction axis when the parallel
    axes leave units idle), with wave quantization as in FlashAttention-2's num_splits heuristic.

    Raises:
        ValueError: num_compute_units unknown.
    """
    units = int(require_limit(limits, "num_compute_units"))
    times = {splits: tiles_time(config, prob, splits, units) for splits in split_candidates(config, prob)}
    least = min(times.values())
    return min(splits for splits, modeled in times.items() if modeled <= least * (1 + SPLIT_MARGIN))


def program_count(config: FamilyConfig, prob: Problem, limits: Any) -> int:
    """Programs launched by the main kernel of ``run_family(config)``: tiles x splits, or for stream-K
    `stream_k_programs` (the tile schedule when K = 0).

    Raises:
        ValueError: a limit it needs (num_compute_units for split_k=0 or stream-K) is unknown.
    """
    tiles, iterations = tile_count(config, prob), k_iterations(config, prob)
    if config.stream_k and iterations > 0:
        return stream_k_programs(tiles * iterations, int(require_limit(limits, "num_compute_units")))
    requested = config.split_k or auto_split_k(config, prob, limits)
    return tiles * effective_splits(requested, iterations)[0]
