"""The schedule model of the family: tiles, K-iterations, splits, program counts, and the split-K rule.

Times are modeled for memory-bound calls (skinny GEMMs: intensity ~ M FLOP/byte, below the ridge point of current
GPUs for M <= 128) in bytes of one compute unit's bandwidth share: each unit runs one program at a time and receives
1/units of the device bandwidth, so a program that moves X bytes takes X / (bandwidth / units). A program costs
`FILL_BYTES` of fixed time (start, first-load latency, epilogue) plus its K-iterations; a K-iteration costs its
weight tile (BLOCK_N x BLOCK_K, from device memory) plus `A_WEIGHT` x its activation tile (re-read by every column
tile, mostly from L2), divided by the fraction of `IN_FLIGHT_BYTES` its pipeline keeps in flight
(`pipeline_stages` picks the stages that keep all of it). Splits add a
float32 partial write per program and the reduction of the partials (`reduce_bytes`).
The constants were fitted to the H200 sweep of 18 bench cases x ~10 variants each (benchmarks/bench_splitk_gemm.py
--sweep; BENCHMARKS.md, split-K GEMM): among the measured deterministic variants of each case the model's pick is
1.4 % slower than the fastest in geometric mean (15 % at worst: M = 64, N = K = 4096, whose fastest, 64-column
tiles at 4 stages, the model charges for too few bytes in flight; the rule gives that tile 5 stages), against 5.1 %
(18 % at worst) for the rule it replaces.
Being per unit, they carry over to chips with other unit counts of a similar memory system (a partition of a GPU).
"""

from __future__ import annotations

import math
from dataclasses import replace

import triton

from kernels.chip import ChipLimits
from kernels.splitk_gemm.common import Problem, require_limit
from kernels.splitk_gemm.config import MAX_SPLIT_K, FamilyConfig, smem_footprint_kb
from kernels.splitk_gemm.family_kernels import REDUCE_UNROLL

#: Fewest K-iterations (of BLOCK_K) a split keeps, so each program still pipelines its loads.
MIN_ITERS_PER_SPLIT = 4
#: Elements of the float32 partials kept below 2**31 (32-bit offsets inside the reduction loops).
MAX_PARTIAL_ELEMS = 2**31 - 1
#: Fixed time of one program in bytes of its unit's bandwidth share: launch and ramp, the first tile's latency,
#: the epilogue (H200 fit: 100-150 KB, i.e. ~3-4 us at 36 GB/s per unit).
FILL_BYTES = 128 * 1024
#: Weight of activation-tile bytes against weight-tile bytes: A [M, K] is re-read by every column tile and is
#: served mostly from L2 (H200 fit: 0-0.5).
A_WEIGHT = 0.5
#: Bytes a program must have in flight to draw its bandwidth share, weighted as `weighted_stage_bytes`: the share
#: times a loaded DRAM round trip (Little's law; H200 fit: 80-100 KB, i.e. 36 GB/s x ~2.5 us; it also reproduces
#: the measured best stage counts: 4 at 128 x 128 weight tiles and M <= 64, 5 at 128 x 64 and M = 128).
IN_FLIGHT_BYTES = 96 * 1024
#: One dependent L2 round trip in the last program's reduction (H200 fit: 5-10 KB, ~0.2 us).
L2_ROUND_TRIP_BYTES = 6 * 1024
#: Most pipeline stages the rule gives (the largest num_stages of the family's searched knob values, space.KNOBS).
MAX_STAGES = 6
#: The reduce kernel of the "workspace" mode: its launch and ramp (H200 fit: 100-200 KB).
REDUCE_LAUNCH_BYTES = 128 * 1024


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


def weighted_stage_bytes(config: FamilyConfig, prob: Problem) -> float:
    """A pipeline stage's bytes as the model weighs them: weight tile BLOCK_N x BLOCK_K + `A_WEIGHT` x activation
    tile min(M, BLOCK_M) x BLOCK_K, times the element size."""
    a_tile = min(prob.m, config.block_m) * config.block_k * prob.elem
    return config.block_n * config.block_k * prob.elem + A_WEIGHT * a_tile


def in_flight_fraction(config: FamilyConfig, prob: Problem) -> float:
    """Share of `IN_FLIGHT_BYTES` the pipeline keeps in flight, at most 1: (num_stages - 1) x
    `weighted_stage_bytes` (one stage is being consumed while the others load)."""
    return min(1.0, max(config.num_stages - 1, 1) * weighted_stage_bytes(config, prob) / IN_FLIGHT_BYTES)


def pipeline_stages(config: FamilyConfig, prob: Problem, smem_kb: float) -> int:
    """Stages for `config`: the fewest (at least 2) with (stages - 1) x `weighted_stage_bytes` >= `IN_FLIGHT_BYTES`,
    at most as many as `smem_kb` holds (`config.smem_footprint_kb` per stage), at most `MAX_STAGES`. E.g. H200 bfloat16:
    128 x 128 weight tiles 4 stages at M <= 64, 128 x 64 weight tiles with BLOCK_M = 128 5 stages."""
    need = 1 + math.ceil(IN_FLIGHT_BYTES / weighted_stage_bytes(config, prob))
    per_stage_kb = smem_footprint_kb(replace(config, num_stages=1), prob.dtype)
    return max(2, min(need, int(smem_kb // per_stage_kb), MAX_STAGES))


def iteration_bytes(config: FamilyConfig, prob: Problem) -> float:
    """Modeled time of one K-iteration in bytes of a unit's share: `weighted_stage_bytes` / `in_flight_fraction`."""
    return weighted_stage_bytes(config, prob) / in_flight_fraction(config, prob)


def partial_bytes(config: FamilyConfig, prob: Problem) -> int:
    """Bytes of one float32 partial tile: min(M, BLOCK_M) x BLOCK_N x 4 (rows past M are not stored)."""
    return min(prob.m, config.block_m) * config.block_n * 4


def reduce_bytes(config: FamilyConfig, prob: Problem, splits: int, units: int, mode: str) -> float:
    """Modeled time of summing `splits` partials per tile after the split programs, in bytes of a unit's share:
    - "fused": the tile's last program reads the splits' partials, ceil(splits / `REDUCE_UNROLL`) dependent L2
      round trips;
    - "atomic": one partial-tile exchange and one round trip;
    - "workspace": a second launch whose programs, spread over all units, read splits x M x N float32.
    """
    if splits <= 1:
        return 0.0
    part = partial_bytes(config, prob)
    if mode == "fused":
        return splits * part + math.ceil(splits / REDUCE_UNROLL) * L2_ROUND_TRIP_BYTES
    if mode == "atomic":
        return part + L2_ROUND_TRIP_BYTES
    return REDUCE_LAUNCH_BYTES + splits * prob.m * prob.n * 4 / units


def tiles_time(config: FamilyConfig, prob: Problem, splits: int, units: int, mode: str | None = None) -> float:
    """Modeled time of the tile schedule at `splits` (reduction `mode`, default the config's), in bytes of a unit's
    share: waves x (K-iterations per split x `iteration_bytes` + `FILL_BYTES` [+ one partial write]) +
    `reduce_bytes`; waves = ceil(tiles x splits / units)."""
    iterations = k_iterations(config, prob)
    splits, per_split = effective_splits(splits, iterations)
    waves = math.ceil(tile_count(config, prob) * splits / units)
    program = per_split * iteration_bytes(config, prob) + FILL_BYTES
    if splits > 1:
        program += partial_bytes(config, prob)
    return waves * program + reduce_bytes(config, prob, splits, units, mode or config.reduce_mode)


def stream_k_time(config: FamilyConfig, prob: Problem, units: int) -> float:
    """Modeled time of the stream-K schedule, in bytes of a unit's share: one equal share of tiles x iterations per
    program, `FILL_BYTES` and a partial write per tile segment of a share, and the fix-up read of a tile's
    contributors."""
    iterations = k_iterations(config, prob)
    total = tile_count(config, prob) * iterations
    if total == 0:
        return 0.0
    programs = stream_k_programs(total, units)
    share = math.ceil(total / programs)
    segments = math.ceil(share / iterations) + 1
    contributors = math.ceil(iterations / share) + 1
    part = partial_bytes(config, prob)
    return share * iteration_bytes(config, prob) + segments * (FILL_BYTES + part) + contributors * (
        part + L2_ROUND_TRIP_BYTES)


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


def auto_split_k(config: FamilyConfig, prob: Problem, limits: ChipLimits | None) -> int:
    """Split-K factor of a call: the fewest splits among `split_candidates` whose `tiles_time` on the chip's compute
    units is within `SPLIT_MARGIN` of the least. Skinny calls (few tiles, long K) split until tiles x splits fill
    the units; a grid that fills them keeps one split unless splitting evens out its last wave by more than the
    extra program starts and partials cost.
    Source: split-K as in CUTLASS's split-K GEMMs and flash-decoding (split the reduction axis when the parallel
    axes leave units idle), with wave quantization as in FlashAttention-2's num_splits heuristic.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    units = int(require_limit(limits, "num_compute_units"))
    times = {splits: tiles_time(config, prob, splits, units) for splits in split_candidates(config, prob)}
    least = min(times.values())
    return min(splits for splits, modeled in times.items() if modeled <= least * (1 + SPLIT_MARGIN))


def program_count(config: FamilyConfig, prob: Problem, limits: ChipLimits | None) -> int:
    """Programs launched by the main kernel of ``run_family(config)``: tiles x splits, or for stream-K
    `stream_k_programs` (the tile schedule when K = 0).

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None where a limit is needed (split_k=0 or stream-K).
    """
    tiles, iterations = tile_count(config, prob), k_iterations(config, prob)
    if config.stream_k and iterations > 0:
        return stream_k_programs(tiles * iterations, int(require_limit(limits, "num_compute_units")))
    requested = config.split_k or auto_split_k(config, prob, limits)
    return tiles * effective_splits(requested, iterations)[0]
