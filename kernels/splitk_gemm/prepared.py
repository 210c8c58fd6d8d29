"""The host side of a split-K GEMM call, prepared once per call signature and replayed on later calls.

A call's signature (`call_key`) is everything its launch depends on besides the data: shapes, strides, dtypes,
devices, and whether each tensor's address is 16-byte aligned (the one property of a pointer Triton specializes
on). A `PreparedCall` holds what `family.run_family` computed for one signature and one configuration: the
kernels bound to their grids and constexprs (`kernels.launch.DirectLaunch`), their integer arguments, and which
workspace they use. Replaying it costs a dictionary lookup, the workspace check and one launcher call per kernel.
"""

from __future__ import annotations

from typing import Any

import torch

from kernels.launch import DirectLaunch, current_device_and_stream
from kernels.splitk_gemm import workspace
from kernels.splitk_gemm.common import Problem, input_precision
from kernels.splitk_gemm.family_kernels import (
    ATOMIC,
    REDUCE_UNROLL,
    WORKSPACE,
    _reduce_kernel,
    _splitk_kernel,
    _streamk_kernel,
    reduce_grid,
)
from kernels.splitk_gemm.schedule import tile_count

REDUCE_BLOCK = 1024
#: Positional arguments of the kernels: pointers (a, b, c, ws, counters) then the integers; the rest are constexprs.
_MAIN_POSITIONAL = 15
_REDUCE_POSITIONAL = 6


def call_key(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple:
    """Hashable signature of a call from tensor metadata only: shapes, strides, dtypes, devices and 16-byte
    alignment of a, b and c. Two calls with equal keys launch the same compiled kernels with the same integers."""
    return (a.shape, b.shape, c.shape, a.stride(), b.stride(), c.stride(), a.dtype, b.dtype, c.dtype, a.device,
            b.device, c.device, a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0, c.data_ptr() % 16 == 0)


class PreparedCall:
    """The launches of one `LaunchPlan` (``family.LaunchPlan``) for one call signature on one device.

    Calling it with tensors of that signature launches the main kernel (and the reduce kernel of the "workspace"
    mode) with the pooled workspace of the current stream; nothing is checked or computed again.
    """

    def __init__(self, plan: Any, prob: Problem, strides: tuple[int, ...], device: torch.device) -> None:
        config = plan.config
        meta = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
                    PRECISION=input_precision(prob.dtype), GEMV=config.gemv, STAGES=config.num_stages,
                    EVICT_B=config.evict_weights, num_warps=config.num_warps,
                    num_stages=config.num_stages)
        tiles = tile_count(config, prob)
        self.plan, self.device = plan, device
        self.reduce: DirectLaunch | None = None
        mn = prob.m * prob.n
        if plan.stream_k:
            self.main = DirectLaunch(_streamk_kernel, (plan.programs,), meta, _MAIN_POSITIONAL)
            self.ints = (prob.m, prob.n, prob.k, *strides, plan.programs)
            self.buffers = (("partials", 2 * plan.programs * config.block_m * config.block_n), ("counters", tiles))
        else:
            meta.update(SPLIT_K=plan.splits, REDUCE=plan.mode, UNROLL=REDUCE_UNROLL)
            self.main = DirectLaunch(_splitk_kernel, (tiles, plan.splits), meta, _MAIN_POSITIONAL)
            self.ints = (prob.m, prob.n, prob.k, *strides, plan.per_split)
            self.buffers = ()
            if plan.splits > 1:
                ws = ("accumulator", mn) if plan.mode == ATOMIC else ("partials", plan.splits * mn)
                self.buffers = (ws, ("counters", tiles))
            if plan.splits > 1 and plan.mode == WORKSPACE:
                meta = dict(SPLIT_K=plan.splits, BLOCK=REDUCE_BLOCK, UNROLL=REDUCE_UNROLL, num_warps=4)
                self.reduce = DirectLaunch(_reduce_kernel, reduce_grid(prob.m, prob.n, REDUCE_BLOCK), meta,
                                           _REDUCE_POSITIONAL)
                self.reduce_ints = (prob.m, prob.n, strides[4], strides[5])
        self._held: tuple = (None, -1, None, None)  # (stream, workspace.GENERATION, ws, counters)

    def __call__(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        """Launch on tensors of this call's signature (asynchronous; c is written in place)."""
        device, stream = current_device_and_stream(self.device.type)
        args = self.main_arguments(a, b, c, stream)
        self.main.launch(device, stream, args)
        if self.reduce is not None:
            self.reduce.launch(device, stream, (args[3], c, *self.reduce_ints))

    def main_arguments(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, stream: int) -> tuple:
        """Positional arguments of the main kernel on `stream`: a, b, c, the workspace and counters, the integers."""
        ws, counters = self._workspace(stream) if self.buffers else (c, c)
        return (a, b, c, ws, counters, *self.ints)

    def _workspace(self, stream: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(ws, counters) of `stream`, fetched from the pool again when the stream or the pool moved."""
        held_stream, generation, ws, counters = self._held
        if stream != held_stream or generation != workspace.GENERATION[0]:
            fetch = {"partials": workspace.partials, "accumulator": workspace.accumulator,
                     "counters": workspace.tile_counters}
            ws, counters = (fetch[name](self.device, numel, stream) for name, numel in self.buffers)
            self._held = (stream, workspace.GENERATION[0], ws, counters)
        return ws, counters
