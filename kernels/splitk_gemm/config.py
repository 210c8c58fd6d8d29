"""Knobs of the split-K GEMM family (`FamilyConfig`), its shared-memory footprint, and the fit to chip limits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from kernels.chip import ChipLimits
from kernels.splitk_gemm.common import FLOAT32_TILE_CAP, Problem, require_limit

MAX_SPLIT_K = 64
#: Most rows of A one GEMV-mode program multiplies (``FamilyConfig.gemv``): each weight element then costs up to
#: GEMV_MAX_ROWS fused multiply-adds on the vector units, which stays below the bytes-per-FMA balance of current GPUs
#: (H200: 67 TFLOP/s fp32 over 4.8 TB/s is ~7 FMA per bf16 weight element), so the program is still a weight stream.
GEMV_MAX_ROWS = 4
#: Most rows at which the GEMV mode is offered (the GEMV pattern's precondition and the row bound of the ``m1``
#: dispatch class, `dispatch.dispatch_class`): one row, where the mode measured faster than cuBLAS and the tensor-core
#: tiles on the H200 (BENCHMARKS.md, split-K GEMM, few-row sweep); with more rows the several-rows path reduces the
#: [rows, BLOCK_N, BLOCK_K] product over K every iteration and measured 2-20x slower.
GEMV_OFFER_ROWS = 1


@dataclass(frozen=True)
class FamilyConfig:
    """Knob values of the family. The defaults are the baseline's structure (one program per tile, no split).

    How the K splits of a tile are summed (`reduce_mode`): by a separate reduce kernel over float32 partials in a
    workspace (default, "workspace"); with ``fused_reduce`` by the tile's last arriving program, in split order
    ("fused", one launch); with ``atomic`` by float32 atomics into a zeroed accumulator ("atomic", one launch, the
    one non-deterministic mode: the low bits depend on arrival order; it overrides fused_reduce).
    ``stream_k`` replaces the tiles x splits grid by stream-K and ignores split_k, fused_reduce and atomic (its
    partial tiles are always fixed up in program order).
    ``gemv`` computes each tile without ``tl.dot``: a broadcast multiply of the A rows with the weight tile and a
    sum over K on the vector units (`common.gemv_tile`), for calls of a few rows where the product is a pure weight
    stream; a program then takes min(BLOCK_M, next power of two >= M, `GEMV_MAX_ROWS`) rows (`gemv_rows`), and
    BLOCK_M may be below 16 (``tl.dot``'s minimum, which the GEMV path does not need).
    ``evict_weights`` loads the weights with the ``evict_first`` L2 policy (`common.load_weights`): B is read once,
    so its lines go first and A, partials and counters stay in L2. The hint reaches the PTX only on loads into
    registers (num_stages 1: ``ld.global.L2::cache_hint`` with an ``L2::evict_first`` policy); Triton 3.6 drops it
    on the ``cp.async`` copies of pipelined loads (num_stages >= 2; `offline_compile` PTX for sm_90).
    """

    block_m: int = 64
    block_n: int = 64
    block_k: int = 64
    split_k: int = 1
    fused_reduce: bool = False
    atomic: bool = False
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 3
    stream_k: bool = False
    gemv: bool = False
    evict_weights: bool = False

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k"):
            value = getattr(self, name)
            least = 1 if name == "block_m" and self.gemv is True else 16
            if not least <= value <= 256 or value & (value - 1):
                raise ValueError(f"FamilyConfig.{name}={value} must be a power of two in [{least}, 256]")
        for name in ("fused_reduce", "atomic", "stream_k", "gemv", "evict_weights"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"FamilyConfig.{name}={getattr(self, name)!r} must be a bool")
        if (not 0 <= self.split_k <= MAX_SPLIT_K or not 1 <= self.group_m <= 64
                or self.num_warps not in (1, 2, 4, 8, 16) or not 1 <= self.num_stages <= 8):
            raise ValueError(f"FamilyConfig out of range: {self}")

    @property
    def reduce_mode(self) -> str:
        """"atomic", "fused" or "workspace" (see the class docstring)."""
        return "atomic" if self.atomic else "fused" if self.fused_reduce else "workspace"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the knobs."""
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FamilyConfig:
        """Inverse of `to_dict`; unknown keys raise ValueError naming them."""
        unknown = set(data) - set(FamilyConfig.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown FamilyConfig knob(s): {sorted(unknown)}")
        return FamilyConfig(**data)


def gemv_rows(block_m: int, m: int) -> int:
    """Rows of A per program in GEMV mode: min(`block_m`, the next power of two >= `m`, `GEMV_MAX_ROWS`)."""
    return min(block_m, 1 << max(0, (max(m, 1) - 1).bit_length()), GEMV_MAX_ROWS)


def smem_footprint_kb(config: FamilyConfig, dtype: torch.dtype) -> float:
    """Shared memory of one program in KiB: num_stages A and B tiles, elem * num_stages * (BLOCK_M + BLOCK_N) *
    BLOCK_K / 1024 (Triton's software pipeliner keeps one buffer of each loaded tile per stage)."""
    return dtype.itemsize * config.num_stages * (config.block_m + config.block_n) * config.block_k / 1024


def shrink_once(config: FamilyConfig) -> FamilyConfig | None:
    """One step down in shared memory, keeping two pipeline stages as long as any tile does: num_stages down to 2,
    then BLOCK_K down to 32, BLOCK_N down to 32, BLOCK_M down to 16; then one stage; then BLOCK_K, BLOCK_N down
    to 16. None when nothing is left to shrink."""
    steps = (("num_stages", 2, 1), ("block_k", 32, 2), ("block_n", 32, 2), ("block_m", 16, 2),
             ("num_stages", 1, 1), ("block_k", 16, 2), ("block_n", 16, 2))
    for name, floor, step in steps:
        value = getattr(config, name)
        if value > floor:
            return replace(config, **{name: value - 1 if step == 1 else value // 2})
    return None


def cap_float32(config: FamilyConfig, dtype: torch.dtype) -> FamilyConfig:
    """`config` with float32 tiles and stages capped at `FLOAT32_TILE_CAP` (other dtypes unchanged)."""
    if dtype != torch.float32:
        return config
    cap_m, cap_n, cap_k, cap_stages = FLOAT32_TILE_CAP
    return replace(config, block_m=min(config.block_m, cap_m), block_n=min(config.block_n, cap_n),
                   block_k=min(config.block_k, cap_k), num_stages=min(config.num_stages, cap_stages))


def fit_to_limits(config: FamilyConfig, prob: Problem, limits: ChipLimits | None) -> FamilyConfig:
    """`config` within the chip's limits: float32 tiles capped at `FLOAT32_TILE_CAP`; num_warps * warp_size <=
    max_threads_per_block; tiles shrunk by `shrink_once` until `smem_footprint_kb` <= smem_per_block_kb.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None.
    """
    config = cap_float32(config, prob.dtype)
    max_warps = int(require_limit(limits, "max_threads_per_block") // require_limit(limits, "warp_size"))
    warps = config.num_warps
    while warps > max(1, max_warps):
        warps //= 2
    config = replace(config, num_warps=warps)
    budget = require_limit(limits, "smem_per_block_kb")
    while smem_footprint_kb(config, prob.dtype) > budget:
        smaller = shrink_once(config)
        if smaller is None:
            break
        config = smaller
    return config
