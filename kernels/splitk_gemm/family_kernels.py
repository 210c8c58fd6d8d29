"""Triton kernels of the split-K family: the split-K tile kernel, its reduce kernel, and the stream-K kernel.

Each tile's product is `common.tile_product`: ``tl.dot`` tiles (`common.mac_tile`), or with the GEMV constexpr a
broadcast multiply and sum over K on the vector units (`common.gemv_tile`, ``FamilyConfig.gemv``); with EVICT_B the
weights are loaded evict-first (`common.load_weights`, ``FamilyConfig.evict_weights``).

Reductions of the K splits of one output tile (`REDUCE`):
- WORKSPACE: split s stores its float32 partial into ws[s, M, N]; `_reduce_kernel` then sums s = 0 .. S-1 in
  that order and writes C (two launches, deterministic).
- FUSED: as WORKSPACE, then each program counts its arrival on the tile's counter; the last to arrive sums the
  S partials in the order s = 0 .. S-1 and writes C (one launch, deterministic: the order never depends on which
  program is last).
- ATOMIC: each split adds its partial into a zeroed float32 accumulator with atomics; the last to arrive takes the
  tile's sums and zeroes the accumulator in one atomic exchange per element, then writes C (one launch; float32
  sums in arrival order, so the low bits vary between runs).
Arrival: a CTA barrier, then one increment at GPU scope with acquire-release order, so every thread's partial is
visible before the counter moves and the last program reads the others' partials after it (the semaphore of
CUTLASS's serial split-K: __syncthreads, then a fenced atomic by one thread). The last program reads partials at
L2 (``.cg``) and resets the counter, so the zeroed workspaces stay zero between calls (`workspace.py`). No program
waits for another: nothing can deadlock, also under the interpreter, which runs programs one after another.

Within one program, Triton lays out every pointer tensor on its own (which thread holds which element), so two
operations on the same addresses through different pointer values may run in different threads, unordered
without a CTA barrier. Hence: a barrier between a program's partial writes and its arrival (the last program
reads partials its own other threads wrote), and the atomic accumulator read and reset by one exchange per
element. `offline_compile.unordered_accesses` checks the compiled kernels for such pairs. Stream-K writes slots
across loop iterations: a program's fix-up reads its own slot 2p + 1 only for the tile of its last segment, after
which it writes no slot, so no write of a later iteration meets a read of an earlier one.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels.splitk_gemm.common import store_tile, tile_of, tile_product

WORKSPACE, FUSED, ATOMIC = 0, 1, 2  # values of REDUCE on the host
_WORKSPACE, _ATOMIC = tl.constexpr(WORKSPACE), tl.constexpr(ATOMIC)  # the same, readable inside the kernels
#: Partial tiles a reduction loads together per dependent round trip (the UNROLL constexpr of the kernels that
#: reduce, `_sum_partials`; schedule.REDUCE_UNROLL models it).
REDUCE_UNROLL = 8


@triton.jit
def _mn_offsets(pid_m, pid_n, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row-major [M, N] offsets of tile (pid_m, pid_n) and its in-bounds mask."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
    return offs, (rows[:, None] < M) & (cols[None, :] < N)


@triton.jit
def _arrive(counter):
    """Count this program's arrival on `counter` after all of its threads' writes; returns the previous count."""
    tl.debug_barrier()
    return tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")


@triton.jit
def _load_partial(ws_ptr, s, plane, offs, inside, AT_L2: tl.constexpr):
    """ws[s * plane + offs] (float32, 0 where not `inside`); `AT_L2`: read at L2 (``.cg``: other programs' writes)."""
    ptrs = ws_ptr + tl.cast(s, tl.int64) * plane + offs
    if AT_L2:
        return tl.load(ptrs, mask=inside, other=0.0, cache_modifier=".cg")
    return tl.load(ptrs, mask=inside, other=0.0)


@triton.jit
def _sum_partials(ws_ptr, offs, inside, plane, SPLIT_K: tl.constexpr, UNROLL: tl.constexpr,
                  AT_L2: tl.constexpr):
    """Sum over s = 0 .. SPLIT_K-1, in that order, of ws[s * plane + offs] (float32, 0 where not `inside`).

    Unrolled in groups of UNROLL (and the SPLIT_K % UNROLL rest): a group's loads are independent
    straight-line code, issued together, so the group waits for one round trip, not one per load as a rolled
    loop does. The additions keep the order s = 0, 1, ... (deterministic whichever program sums).
    """
    total = tl.zeros(offs.shape, dtype=tl.float32)
    for first in range(0, SPLIT_K - SPLIT_K % UNROLL, UNROLL):
        for j in tl.static_range(UNROLL):
            total += _load_partial(ws_ptr, first + j, plane, offs, inside, AT_L2)
    for j in tl.static_range(SPLIT_K % UNROLL):
        total += _load_partial(ws_ptr, SPLIT_K - SPLIT_K % UNROLL + j, plane, offs, inside, AT_L2)
    return total


@triton.jit
def _take_and_zero(ptrs, mask, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The float32 values at `ptrs` [BLOCK_M, BLOCK_N] (0 where not `mask`), leaving zeros there: one atomic
    exchange per element, so each element is read and reset by the same thread (a load and a separate store of
    zeros get layouts of their own: another thread could zero an element before this one has read it). Exchanged
    as int32 bit patterns (float32 zero is all zero bits; Triton's interpreter exchanges integers only)."""
    bits = tl.atomic_xchg(ptrs.to(tl.pointer_type(tl.int32)), tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32),
                          mask=mask, sem="relaxed", scope="gpu")
    return tl.where(mask, bits.to(tl.float32, bitcast=True), 0.0)


@triton.jit
def _splitk_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, counters, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm,
    stride_cn, iters_per_split,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, REDUCE: tl.constexpr, PRECISION: tl.constexpr, UNROLL: tl.constexpr,
    GEMV: tl.constexpr, STAGES: tl.constexpr, EVICT_B: tl.constexpr = False,
):
    """Program (tile, s) of grid (tiles, SPLIT_K): K-iterations [s * iters_per_split, +iters_per_split) of one tile.

    ws: float32 [SPLIT_K, M, N] partials (WORKSPACE, FUSED) or the zeroed [M, N] accumulator (ATOMIC).
    """
    tile = tl.program_id(0)
    split = tl.program_id(1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tile_of(tile, tiles_m, tiles_n, GROUP_M)
    it_lo = split * iters_per_split
    it_hi = min(it_lo + iters_per_split, tl.cdiv(K, BLOCK_K))
    acc = tile_product(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n, it_lo,
                       it_hi, BLOCK_M, BLOCK_N, BLOCK_K, PRECISION, GEMV, STAGES, EVICT_B)
    if SPLIT_K == 1:
        store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)
    else:
        offs, inside = _mn_offsets(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
        if REDUCE == _ATOMIC:
            tl.atomic_add(ws_ptr + offs, acc, mask=inside, sem="relaxed", scope="gpu")
        else:
            tl.store(ws_ptr + split.to(tl.int64) * M * N + offs, acc, mask=inside)
        if REDUCE != _WORKSPACE:
            if _arrive(counters + tile) == SPLIT_K - 1:
                if REDUCE == _ATOMIC:
                    total = _take_and_zero(ws_ptr + offs, inside, BLOCK_M, BLOCK_N)
                else:
                    total = _sum_partials(ws_ptr, offs, inside, M * N, SPLIT_K, UNROLL, True)
                store_tile(c_ptr, total, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)
                tl.store(counters + tile, 0)


@triton.jit
def _reduce_kernel(ws_ptr, c_ptr, M, N, stride_cm, stride_cn, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
                   UNROLL: tl.constexpr):
    """C[m, n] = sum over s = 0 .. SPLIT_K-1, in that order, of ws[s, m, n] (float32), in C's dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < M * N
    total = _sum_partials(ws_ptr, offs, inside, M * N, SPLIT_K, UNROLL, False)
    row = offs // N
    col = offs % N
    tl.store(c_ptr + row * stride_cm + col * stride_cn, total.to(c_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _first_iteration(p, total, programs):
    """First MAC iteration of stream-K program p: floor(p * total / programs) (shares differ by at most one)."""
    return (tl.cast(p, tl.int64) * total // programs).to(tl.int32)


@triton.jit
def _owner(i, total, programs):
    """Stream-K program whose share holds MAC iteration i: the largest p with floor(p * total / programs) <= i."""
    return (((tl.cast(i, tl.int64) + 1) * programs - 1) // total).to(tl.int32)


@triton.jit
def _slot_offsets(slot, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Offsets of partial slot `slot` (a [BLOCK_M, BLOCK_N] float32 tile) in the stream-K workspace."""
    local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    return tl.cast(slot, tl.int64) * (BLOCK_M * BLOCK_N) + local


@triton.jit
def _streamk_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, counters, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm,
    stride_cn, programs,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr, GEMV: tl.constexpr, STAGES: tl.constexpr, EVICT_B: tl.constexpr = False,
):
    """Stream-K: `programs` programs (<= the MAC iterations) each take an equal share of the tiles x K-iterations.

    A program walks its share tile by tile. A tile it covers whole is stored directly; a partial one goes to its
    slot (2p for the first tile of its share, 2p + 1 for the last; ws float32 [2 * programs, BLOCK_M, BLOCK_N]) and
    the tile's last arriving contributor sums the contributors' slots in program order (deterministic) into C.
    Source: Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on
    the GPU", PPoPP 2023 (here with an arrival count instead of waiting, and a fixed summation order).
    """
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    iters_per_tile = tl.cdiv(K, BLOCK_K)
    total = tiles_m * tiles_n * iters_per_tile
    share_lo = _first_iteration(pid, total, programs)
    share_hi = _first_iteration(pid + 1, total, programs)
    it = share_lo
    while it < share_hi:
        tile = it // iters_per_tile
        tile_lo = tile * iters_per_tile
        tile_hi = tile_lo + iters_per_tile
        seg_hi = min(tile_hi, share_hi)
        pid_m, pid_n = tile_of(tile, tiles_m, tiles_n, GROUP_M)
        acc = tile_product(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, pid_m, pid_n,
                           it - tile_lo, seg_hi - tile_lo, BLOCK_M, BLOCK_N, BLOCK_K, PRECISION, GEMV, STAGES,
                           EVICT_B)
        if it == tile_lo and seg_hi == tile_hi:
            store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)
        else:
            rows_ok = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] < M
            inside = rows_ok & ((pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :] < N)
            slot = 2 * pid + (it != share_lo).to(tl.int32)
            tl.store(ws_ptr + _slot_offsets(slot, BLOCK_M, BLOCK_N), acc, mask=inside)
            first = _owner(tile_lo, total, programs)
            last = _owner(tile_hi - 1, total, programs)
            if _arrive(counters + tile) == last - first:
                fixed = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for q in range(first, last + 1):
                    q_slot = 2 * q + (_first_iteration(q, total, programs) // iters_per_tile != tile).to(tl.int32)
                    fixed += tl.load(ws_ptr + _slot_offsets(q_slot, BLOCK_M, BLOCK_N), mask=inside, other=0.0,
                                     cache_modifier=".cg")
                store_tile(c_ptr, fixed, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)
                tl.store(counters + tile, 0)
        it = seg_hi


def reduce_grid(m: int, n: int, block: int) -> tuple[int]:
    """Grid of `_reduce_kernel` over the M x N outputs, `block` per program."""
    return (triton.cdiv(m * n, block),)
