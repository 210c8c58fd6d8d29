"""The optimized entry point: picks a `FamilyConfig` from the chip limits and the call's sizes.

The rules are written over quantities of the call (M, N, K, dtype) and of the chip (compute units, shared memory
per block, threads per block), never over benchmark case names. The chip limits are a `kernels.chip.ChipLimits`
built from the chip profile: the `limits` argument, else the process's (`kernels.chip.set_chip_limits` /
`kernels.chip.chip_limits`); nothing is read from the device.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
import triton

from kernels.chip import ChipLimits, limits_or_current
from kernels.splitk_gemm.common import Problem, check_inputs, require_limit
from kernels.splitk_gemm.config import GEMV_OFFER_ROWS, FamilyConfig, fit_to_limits, gemv_rows
from kernels.splitk_gemm.family import prepare_and_launch
from kernels.splitk_gemm.prepared import PreparedCall, call_key
from kernels.splitk_gemm.schedule import auto_split_k, k_iterations, pipeline_stages, stream_k_time, tiles_time

#: Stream-K is taken only where its modeled time is below this fraction of the best tile grid's (a margin for what
#: the model leaves out: the fix-up's serial reads and the longer per-program bookkeeping).
STREAM_K_BELOW = 0.9
#: A later candidate of `TILE_CANDIDATES` replaces an earlier one only if modeled faster by more than this fraction.
CHOICE_MARGIN = 0.03
#: (BLOCK_N, BLOCK_K) weight tiles the rule compares, first the one it keeps on near-ties.
TILE_CANDIDATES = ((128, 128), (128, 64), (64, 128), (128, 256), (64, 64), (64, 256))

#: The GEMV mode's weight tile (BLOCK_N, BLOCK_K) and warps at M <= `config.GEMV_OFFER_ROWS`.
GEMV_TILE = (128, 64)
GEMV_WARPS = 8

#: PreparedCall per (chip limits, call signature) of the tuned entry point.
_PREPARED: dict[tuple, PreparedCall] = {}


def choose_config(limits: ChipLimits, m: int, n: int, k: int, dtype: torch.dtype) -> FamilyConfig:
    """Family configuration for a call A [m, k] @ B[n, k]^T of `dtype` on a chip with `limits`: the GEMV mode
    (`gemv_config`) at M <= `config.GEMV_OFFER_ROWS`, else the tensor-core tiles of least modeled time
    (`dot_config`).

    Source: BENCHMARKS.md, Split-K GEMM, M <= 16 sweep (H200, bf16, the five bench layers at M = 1, each timed
    after a dirty and after a clean L2 flush): the GEMV configuration measured faster than cuBLAS on 4 of 5 layers
    dirty (geomean 1.038x) and 5 of 5 clean (1.070x), against 1.023x / 1.033x for `dot_config`'s split-K tiles;
    GEMV over those tiles: 1.016x dirty (faster on 3 of 5), 1.035x clean (4 of 5).

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    if m <= GEMV_OFFER_ROWS:
        return gemv_config(limits, m, n, k, dtype)
    return dot_config(limits, m, n, k, dtype)


def gemv_config(limits: ChipLimits, m: int, n: int, k: int, dtype: torch.dtype) -> FamilyConfig:
    """The GEMV-mode configuration (``FamilyConfig.gemv``, no ``tl.dot``) of a call of M rows: BLOCK_M =
    `config.gemv_rows` of M (1 at M = 1), a `GEMV_TILE` weight tile (128 x 64) over `GEMV_WARPS` (8) warps,
    `schedule.pipeline_stages` stages (H200 bf16: 6), fitted to the chip (`fit_to_limits`: threads per block,
    shared memory per block, float32 tile cap); split_k from the family's rule (`schedule.auto_split_k` of the
    fitted tiles, the count split_k = 0 would size at launch), the splits summed by the tile's last program
    (fused_reduce), GROUP_M 8. Source: as `choose_config`.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    prob = Problem(m, n, k, dtype)
    smem_kb = float(require_limit(limits, "smem_per_block_kb"))
    block_n, block_k = GEMV_TILE
    tiles = FamilyConfig(block_m=gemv_rows(16, m), block_n=block_n, block_k=block_k, num_warps=GEMV_WARPS,
                         group_m=8, fused_reduce=True, gemv=True)
    tiles = fit_to_limits(replace(tiles, num_stages=pipeline_stages(tiles, prob, smem_kb)), prob, limits)
    return replace(tiles, split_k=auto_split_k(tiles, prob, limits))


def dot_config(limits: ChipLimits, m: int, n: int, k: int, dtype: torch.dtype) -> FamilyConfig:
    """Tensor-core (``tl.dot``) configuration for a call A [m, k] @ B[n, k]^T of `dtype` on a chip with `limits`
    (`choose_config`'s rule at M > `config.GEMV_OFFER_ROWS`): the least modeled time (`schedule`: bytes of one
    compute unit's bandwidth share) over these choices.

    - BLOCK_M: the smallest power of two >= M in 16..128, so one row block covers M <= 128 and every weight tile is
      read from device memory once (B, N x K, is almost all of the traffic of a skinny call); 4 warps, 8 at
      BLOCK_M = 128 (a 128-row float32 accumulator over 256 threads).
    - weight tiles BLOCK_N x BLOCK_K from `TILE_CANDIDATES`, each with `schedule.pipeline_stages` stages (enough
      bytes in flight for the unit's bandwidth share, within smem_per_block_kb), fitted to the chip
      (`fit_to_limits`; float32 capped at `common.FLOAT32_TILE_CAP`);
    - per tiles: split_k from `auto_split_k` (tiles x splits fill the compute units when the tiles alone do not),
      the splits summed by the tile's last program ("fused", one launch) or by a reduce kernel ("workspace", for
      large partial tiles, whose last-program read would be long); both deterministic;
    - stream-K instead where its modeled time is below `STREAM_K_BELOW` x the best grid's (grids of one to a few
      waves whose last wave runs mostly empty).
    A later candidate wins only by more than `CHOICE_MARGIN`. GROUP_M 8 (L2 reuse of B tiles when M > BLOCK_M).
    Source: the schedule model (kernels/splitk_gemm/schedule.py), fitted to the H200 sweep of the bench cases.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    prob = Problem(m, n, k, dtype)
    units = int(require_limit(limits, "num_compute_units"))
    smem_kb = float(require_limit(limits, "smem_per_block_kb"))
    block_m = min(128, max(16, triton.next_power_of_2(max(m, 1))))
    best, best_time = None, math.inf
    for block_n, block_k in TILE_CANDIDATES:
        tiles = FamilyConfig(block_m=block_m, block_n=block_n, block_k=block_k, group_m=8, fused_reduce=True,
                             num_warps=4 if block_m <= 64 else 8)
        tiles = fit_to_limits(replace(tiles, num_stages=pipeline_stages(tiles, prob, smem_kb)), prob, limits)
        for config, modeled in _schedules(tiles, prob, limits, units):
            if modeled < best_time * (1 - CHOICE_MARGIN):
                best, best_time = config, modeled
    return best


def _schedules(tiles: FamilyConfig, prob: Problem, limits: ChipLimits, units: int) -> list[tuple[FamilyConfig, float]]:
    """(configuration, modeled time) of the schedules of `tiles`: the split grid with a fused reduction, with a
    reduce kernel, and stream-K (its time divided by `STREAM_K_BELOW`)."""
    out = []
    for fused in (True, False):
        config = replace(tiles, fused_reduce=fused)
        splits = auto_split_k(config, prob, limits)
        if fused or splits > 1:
            out.append((replace(config, split_k=splits), tiles_time(config, prob, splits, units)))
    if k_iterations(tiles, prob) > 0:
        out.append((replace(tiles, stream_k=True), stream_k_time(tiles, prob, units) / STREAM_K_BELOW))
    return out


def splitk_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, limits: ChipLimits | None = None) -> torch.Tensor:
    """Optimized ``c = a @ b.T``; same arguments, semantics and errors as the baseline
    (`kernels.splitk_gemm.baseline.splitk_gemm`). Writes `c` in place and returns it.

    Shapes: a [M, K], b [N, K] (``torch.nn.Linear`` weight layout), c [M, N]; one dtype (float16, bfloat16, or
    float32 with IEEE float32 dots); float32 accumulation, one rounding to c's dtype. Deterministic: two calls on the
    same inputs give bitwise equal outputs. `limits` (`kernels.chip.ChipLimits`; default: the process's,
    `kernels.chip.current_chip_limits`) are the chip's limits. The first call of a signature (`prepared.call_key`)
    checks, chooses and plans; later ones replay its launches.

    Raises:
        ValueError: wrong rank, shape, dtype or device.
        kernels.chip.ChipLimitsUnset: no `limits` given and none set for the process.
    """
    limits = limits_or_current(limits)
    key = None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor):
        key = (limits, call_key(a, b, c))
        prepared = _PREPARED.get(key)
        if prepared is not None:
            prepared(a, b, c)
            return c
    prob = check_inputs(a, b, c)
    if prob.m == 0 or prob.n == 0:
        return c
    config = choose_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    prepared = prepare_and_launch(config, a, b, c, limits)
    if prepared is not None and key is not None:
        _PREPARED[key] = prepared
    return c


def prepared_call(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                  limits: ChipLimits | None = None) -> PreparedCall | None:
    """The `PreparedCall` the tuned entry point replays for a call of this signature on `limits` (default: the
    process's), if one was made (for benchmarks that time its parts)."""
    return _PREPARED.get((limits_or_current(limits), call_key(a, b, c)))
