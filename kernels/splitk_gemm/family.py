"""Optimized split-K GEMM family: one parameterized implementation whose knobs are the patterns.

``C[M, N] = A[M, K] @ B[N, K]^T``. Knobs (`FamilyConfig`): tile sizes BLOCK_M x BLOCK_N x BLOCK_K, split_k (K
split into chunks computed by separate programs; 0 = sized from the chip's compute units, `auto_split_k`),
fused_reduce and atomic (how the splits' float32 partials are summed: `FamilyConfig.reduce_mode`,
`family_kernels`), group_m (L2 swizzle of the tile order), num_warps, num_stages (software-pipelining depth of the
A/B loads) and stream_k (instead of a grid of tiles x splits, one program per compute unit, each with an equal
share of all tiles' K-iterations). Chip limits are a `kernels.chip.ChipLimits` built from the chip profile (the
`limits` argument, else the process's); a call that needs one without any limits given is an error naming it.
Every launch is free of host synchronization, and partials live in preallocated workspaces reused across calls
(`workspace.py`). ``gemv`` computes the tiles on the vector units instead of ``tl.dot`` (few-row weight streams:
`common.gemv_tile`), with the same split schedules and reductions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from triton.runtime.errors import OutOfResources

from kernels.chip import ChipLimits, chip_limits_if_set
from kernels.splitk_gemm.common import Problem, check_inputs
from kernels.splitk_gemm.config import (
    FamilyConfig,
    cap_float32,
    fit_to_limits,
    gemv_rows,
    shrink_once,
    smem_footprint_kb,
)
from kernels.splitk_gemm.dispatch import call_class
from kernels.splitk_gemm.family_kernels import ATOMIC, FUSED, WORKSPACE
from kernels.splitk_gemm.prepared import PreparedCall, call_key
from kernels.splitk_gemm.schedule import auto_split_k, effective_splits, k_iterations, program_count, tile_count

REDUCE_KERNEL_MODES = {"workspace": WORKSPACE, "fused": FUSED, "atomic": ATOMIC}


@dataclass(frozen=True)
class LaunchPlan:
    """What `run_family` launches for one (config, call sizes, chip): the fitted config, the main kernel's grid
    size (`programs`), the splits and K-iterations per split (tile schedule), and the reduce mode."""

    config: FamilyConfig
    programs: int
    splits: int
    per_split: int
    mode: int
    stream_k: bool


def plan_launch(config: FamilyConfig, prob: Problem, limits: ChipLimits | None) -> LaunchPlan:
    """The `LaunchPlan` of `config` (fitted to `limits` when given, else float32-capped only) for `prob`; in GEMV
    mode BLOCK_M is first lowered to `config.gemv_rows` of M, so the split rule sizes the grid of those tiles.

    Raises:
        kernels.chip.ChipLimitsUnset: `limits` is None and the plan needs one (split_k = 0, stream-K).
    """
    if config.gemv:
        config = replace(config, block_m=gemv_rows(config.block_m, prob.m))
    config = fit_to_limits(config, prob, limits) if limits is not None else cap_float32(config, prob.dtype)
    iterations = k_iterations(config, prob)
    if config.stream_k and iterations > 0:
        return LaunchPlan(config, program_count(config, prob, limits), 1, iterations, WORKSPACE, True)
    requested = config.split_k or auto_split_k(config, prob, limits)
    splits, per_split = effective_splits(requested, iterations)
    programs = tile_count(config, prob) * splits
    return LaunchPlan(config, programs, splits, max(per_split, 1), REDUCE_KERNEL_MODES[config.reduce_mode], False)


#: PreparedCall per (requested config, chip limits, call signature), after shrinking on an OutOfResources refusal
#: (raised while compiling, before anything runs), so planning, checks and any refusal are paid once.
_PREPARED: dict[tuple, PreparedCall] = {}


def run_family(config: FamilyConfig, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
               limits: ChipLimits | None = None) -> torch.Tensor:
    """``c = a @ b.T`` with the family at `config`; writes `c` in place and returns it.

    Args:
        a: [M, K], b: [N, K] (weights in the ``torch.nn.Linear`` layout), c: [M, N]; one dtype (float16,
            bfloat16, float32 with IEEE float32 dots), any strides. float32 accumulation, one rounding to c's dtype.
        limits: the chip's `kernels.chip.ChipLimits` (from its profile); default: the process's
            (`kernels.chip.set_chip_limits`), if set. With limits the tiles are fitted to them (`fit_to_limits`);
            without, `config` runs as given (float32 tiles capped). split_k=0 and stream-K need num_compute_units.
            A configuration Triton refuses for resources (`OutOfResources` at compile time) is shrunk by
            `shrink_once` and launched again; the first that compiles is remembered.
    The first call of a signature (`prepared.call_key`: shapes, strides, dtypes, devices, alignment) checks and
    plans; later calls of that signature replay its `PreparedCall`.

    Raises:
        ValueError: wrong rank, shape, dtype or device.
        kernels.chip.ChipLimitsUnset: no limits (given or set) where `config` needs one.
        triton.runtime.errors.OutOfResources: not even the smallest tiles compile.
    """
    limits = limits if limits is not None else chip_limits_if_set()
    key = None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor):
        key = (config, limits, call_key(a, b, c))
        prepared = _PREPARED.get(key)
        if prepared is not None:
            prepared(a, b, c)
            return c
    prepared = prepare_and_launch(config, a, b, c, limits)
    if prepared is not None and key is not None:
        _PREPARED[key] = prepared
    return c


def prepare_and_launch(config: FamilyConfig, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                       limits: ChipLimits | None) -> PreparedCall | None:
    """Check the call, plan `config` for it, launch, and return the `PreparedCall` that launched (None when M or N
    is 0: nothing to launch). Shrinks the configuration on OutOfResources (`run_family`).

    Raises:
        As `run_family`.
    """
    prob = check_inputs(a, b, c)
    if prob.m == 0 or prob.n == 0:
        return None
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    plan = plan_launch(config, prob, limits)
    while True:
        prepared = PreparedCall(plan, prob, strides, a.device)
        try:
            prepared(a, b, c)
            return prepared
        except OutOfResources:
            smaller = shrink_once(plan.config)
            if smaller is None:
                raise
            plan = plan_launch(smaller, prob, limits)


__all__ = ["ChipLimits", "FamilyConfig", "LaunchPlan", "auto_split_k", "call_class", "fit_to_limits", "gemv_rows",
           "plan_launch",
           "program_count", "run_family", "shrink_once", "smem_footprint_kb"]
