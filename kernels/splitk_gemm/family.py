"""Optimized split-K GEMM family: one parameterized implementation whose knobs are the patterns.

``C[M, N] = A[M, K] @ B[N, K]^T``. Knobs (`FamilyConfig`): tile sizes BLOCK_M x BLOCK_N x BLOCK_K, split_k (K
split into chunks computed by separate programs; 0 = sized from the chip's compute units, `auto_split_k`),
fused_reduce and atomic (how the splits' float32 partials are summed: `FamilyConfig.reduce_mode`,
`family_kernels`), group_m (L2 swizzle of the tile order), num_warps, num_stages (software-pipelining depth of the
A/B loads) and stream_k (instead of a grid of tiles x splits, one program per compute unit, each with an equal
share of all tiles' K-iterations). Chip limits come as an explicit object (attributes `common.LIMIT_NAMES`, built
from the chip profile); a limit a call needs that is unknown is an error naming it. Every launch is free of host
synchronization, and partials live in preallocated workspaces reused across calls (`workspace.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from triton.runtime.errors import OutOfResources

from kernels.splitk_gemm import workspace
from kernels.splitk_gemm.common import ChipLimits, Problem, check_inputs, input_precision, limits_key
from kernels.splitk_gemm.config import FamilyConfig, cap_float32, fit_to_limits, shrink_once, smem_footprint_kb
from kernels.splitk_gemm.dispatch import call_class
from kernels.splitk_gemm.family_kernels import (
    ATOMIC,
    FUSED,
    WORKSPACE,
    _reduce_kernel,
    _splitk_kernel,
    _streamk_kernel,
    reduce_grid,
)
from kernels.splitk_gemm.schedule import auto_split_k, effective_splits, k_iterations, program_count, tile_count

REDUCE_KERNEL_MODES = {"workspace": WORKSPACE, "fused": FUSED, "atomic": ATOMIC}
REDUCE_BLOCK = 1024


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


def plan_launch(config: FamilyConfig, prob: Problem, limits: Any) -> LaunchPlan:
    """The `LaunchPlan` of `config` (fitted to `limits` when given, else float32-capped only) for `prob`.

    Raises:
        ValueError: a limit it needs is unknown.
    """
    config = fit_to_limits(config, prob, limits) if limits is not None else cap_float32(config, prob.dtype)
    iterations = k_iterations(config, prob)
    if config.stream_k and iterations > 0:
        return LaunchPlan(config, program_count(config, prob, limits), 1, iterations, WORKSPACE, True)
    requested = config.split_k or auto_split_k(config, prob, limits)
    splits, per_split = effective_splits(requested, iterations)
    programs = tile_count(config, prob) * splits
    return LaunchPlan(config, programs, splits, max(per_split, 1), REDUCE_KERNEL_MODES[config.reduce_mode], False)


#: Plan per (requested config, call sizes, chip limits, device), after shrinking on an OutOfResources refusal
#: (raised while compiling, before anything runs), so planning and any refusal are paid once.
_PLANS: dict[tuple, LaunchPlan] = {}


def run_family(config: FamilyConfig, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
               limits: Any = None) -> torch.Tensor:
    """``c = a @ b.T`` with the family at `config`; writes `c` in place and returns it.

    Args:
        a: [M, K], b: [N, K] (weights in the ``torch.nn.Linear`` layout), c: [M, N]; one dtype (float16,
            bfloat16, float32 with IEEE float32 dots), any strides. float32 accumulation, one rounding to c's dtype.
        limits: chip limits (attributes `common.LIMIT_NAMES`, from the chip profile). With limits the tiles are
            fitted to them (`fit_to_limits`); without, `config` runs as given (float32 tiles capped). split_k=0
            and stream-K need num_compute_units. A configuration Triton refuses for resources (`OutOfResources`
            at compile time) is shrunk by `shrink_once` and launched again; the first that compiles is remembered.

    Raises:
        ValueError: wrong rank, shape, dtype or device; a needed chip limit is unknown.
        triton.runtime.errors.OutOfResources: not even the smallest tiles compile.
    """
    prob = check_inputs(a, b, c)
    if prob.m == 0 or prob.n == 0:
        return c
    key = (config, prob, limits_key(limits), a.device)
    plan = _PLANS.get(key)
    if plan is None:
        plan = plan_launch(config, prob, limits)
    while True:
        try:
            _launch(plan, prob, a, b, c)
            break
        except OutOfResources:
            smaller = shrink_once(plan.config)
            if smaller is None:
                raise
            plan = plan_launch(smaller, prob, limits)
    _PLANS[key] = plan
    return c


def _launch(plan: LaunchPlan, prob: Problem, a, b, c) -> None:
    """Launch the main kernel (and the reduce kernel of the "workspace" reduce mode) of `plan`."""
    config = plan.config
    meta = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
                PRECISION=input_precision(prob.dtype), num_warps=config.num_warps, num_stages=config.num_stages)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    tiles = tile_count(config, prob)
    if plan.stream_k:
        ws = workspace.partials(a.device, 2 * plan.programs * config.block_m * config.block_n)
        counters = workspace.tile_counters(a.device, tiles)
        _streamk_kernel[(plan.programs,)](a, b, c, ws, counters, prob.m, prob.n, prob.k, *strides, plan.programs,
                                          **meta)
        return
    ws = counters = c
    if plan.splits > 1:
        mn = prob.m * prob.n
        ws = (workspace.accumulator(a.device, mn) if plan.mode == ATOMIC
              else workspace.partials(a.device, plan.splits * mn))
        counters = workspace.tile_counters(a.device, tiles)
    _splitk_kernel[(tiles, plan.splits)](a, b, c, ws, counters, prob.m, prob.n, prob.k, *strides, plan.per_split,
                                         SPLIT_K=plan.splits, REDUCE=plan.mode, **meta)
    if plan.splits > 1 and plan.mode == WORKSPACE:
        _reduce_kernel[reduce_grid(prob.m, prob.n, REDUCE_BLOCK)](ws, c, prob.m, prob.n, c.stride(0), c.stride(1),
                                                                   SPLIT_K=plan.splits, BLOCK=REDUCE_BLOCK,
                                                                   num_warps=4)


__all__ = ["ChipLimits", "FamilyConfig", "LaunchPlan", "auto_split_k", "call_class", "fit_to_limits", "plan_launch",
           "program_count", "run_family", "shrink_once", "smem_footprint_kb"]
