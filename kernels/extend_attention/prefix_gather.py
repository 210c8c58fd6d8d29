"""Prefix pre-gather: copy the prefix K/V rows named by kv_indices into contiguous per-sequence order.

The family kernel reads the prefix of every sequence through kv_indices (a paged KV cache with page size 1): each
K/V tile is a gather whose row addresses come from a load the tile's loads depend on. With ``pregather`` the
family first copies those rows once into a contiguous workspace (``K_g[t] = K_buf[kv_indices[t]]`` for t in
[0, ΣP)), a memory-bound pass of 2 x ΣP x H_kv x (D_qk + D_v) x elem bytes, and the attention kernel then walks
the prefix like the extend keys (row t of sequence b at kv_indptr[b] + t). It pays off where each prefix row is
read by many query rows (compute-bound chunked prefill: 2048 query rows per 32768-key prefix), never in decode.

One launch copies K and V: each program reads BLOCK_T slot numbers once and moves those tokens' whole
[H_kv, D] rows (H_kv x D elements, contiguous in the usual cache layout) of K, then of V, in BLOCK_C-column
chunks, so every load is a long run of consecutive bytes (a per-head copy moves 2 x D bytes per run).

The workspace is reused across calls of the same size class (as the split-KV partials, `workspace.py`); every row a
call reads is written earlier in the same call.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.extend_attention.workspace import pooled
from kernels.launch import launch, refuse_replay

#: Tokens per program and columns per chunk of the copy (a 16 KiB bf16 tile per chunk). Source: BENCHMARKS.md
#: (benchmarks/bench_prefix_gather.py on the H200, bf16): 8 x 1024 moves mixed-batch's 2 x 134 MB at 3970 GB/s, 95 %
#: of a contiguous copy_ (4183 GB/s) and 7 % faster than torch indexing; the fastest tiling tried on every case.
BLOCK_T = 8
BLOCK_C = 1024


@triton.jit
def _copy_rows(src, dst, slots, offs_t, t_ok, t_read, stride_st, stride_sh, HEAD_W: tl.constexpr,
               ROW_W: tl.constexpr, COPY_W: tl.constexpr, BLOCK_C: tl.constexpr):
    """dst[t, :COPY_W] = src[slots[t]] flattened over (head, column) for the tokens offs_t (dst rows contiguous,
    ROW_W wide; COPY_W < ROW_W copies the leading heads only); rows t_ok but not t_read are written as zeros."""
    for c0 in tl.static_range(0, COPY_W, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        src_cols = (cols // HEAD_W) * stride_sh + cols % HEAD_W
        ok = t_ok[:, None] & (cols < COPY_W)[None, :]
        rows = tl.load(src + slots[:, None] * stride_st + src_cols[None, :], mask=ok & t_read[:, None], other=0.0)
        tl.store(dst + offs_t.to(tl.int64)[:, None] * ROW_W + cols[None, :], rows, mask=ok)


@triton.jit
def _gather_kv_kernel(k_src, v_src, k_dst, v_dst, kv_indices, total, stride_kt, stride_kh, stride_vt, stride_vh,
                      zero_ptr, zero_n, bound_ptr, bound_at, ZERO_BLOCK: tl.constexpr, HAS_BOUND: tl.constexpr,
                      K_HEAD_W: tl.constexpr, K_ROW_W: tl.constexpr,
                      K_COPY_W: tl.constexpr, V_HEAD_W: tl.constexpr,
                      V_ROW_W: tl.constexpr, V_COPY_W: tl.constexpr, HAS_V: tl.constexpr, BLOCK_T: tl.constexpr,
                      BLOCK_C: tl.constexpr):
    """K (and V unless HAS_V is false) rows of BLOCK_T prefix tokens, slot numbers loaded once; program 0 also
    zeroes zero_n int32 at zero_ptr when ZERO_BLOCK > 0 (the gather-ahead counters, without a launch of their own).
    HAS_BOUND: only tokens below the device value at bound_ptr + bound_at (kv_indptr[B]) are copied, the rest
    written as zeros: entries of kv_indices past it are undefined and never read, and no row of the copy is left
    stale."""
    if ZERO_BLOCK > 0:
        if tl.program_id(0) == 0:
            for z0 in range(0, zero_n, ZERO_BLOCK):
                offs_z = z0 + tl.arange(0, ZERO_BLOCK)
                tl.store(zero_ptr + offs_z, tl.zeros([ZERO_BLOCK], dtype=tl.int32), mask=offs_z < zero_n)
    offs_t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = offs_t < total
    t_read = t_ok
    if HAS_BOUND:
        t_read &= offs_t < tl.load(bound_ptr + bound_at)
    slots = tl.load(kv_indices + offs_t, mask=t_read, other=0).to(tl.int64)
    _copy_rows(k_src, k_dst, slots, offs_t, t_ok, t_read, stride_kt, stride_kh, K_HEAD_W, K_ROW_W, K_COPY_W, BLOCK_C)
    if HAS_V:
        _copy_rows(v_src, v_dst, slots, offs_t, t_ok, t_read, stride_vt, stride_vh, V_HEAD_W, V_ROW_W, V_COPY_W,
                   BLOCK_C)


def _workspace(src: torch.Tensor, name: str, total: int) -> torch.Tensor:
    heads, width = src.shape[1], src.shape[2]
    return pooled(src.device, src.dtype, name, total * heads * width).view(total, heads, width)


def gather_prefix(k_buffer: torch.Tensor, v_buffer: torch.Tensor, kv_indices: torch.Tensor,
                  v_is_k: bool = False, first_heads: int | None = None,
                  zero: torch.Tensor | None = None,
                  bound: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Contiguous copies ``(K_g [ΣP, H_kv, D_qk], V_g [ΣP, H_kv, D_v])`` of ``k_buffer[kv_indices]`` and
    ``v_buffer[kv_indices]`` in the reusable workspaces, in one launch. With `first_heads` (an int in [1, H_kv]) only
    those leading KV heads' columns are written (``K_g[:, :n] = k_buffer[kv_indices, :n]``); the other columns keep
    whatever they held (the gather-ahead of `family_ahead` fills them). `zero` (an int32 tensor) is set to 0 in the
    same launch. `bound` (a 1-D int tensor on the device, e.g. ``kv_indptr``) limits the copy to the tokens below
    its last element, which the copy kernel reads (kv_indices entries past kv_indptr[B] are undefined and never
    read); rows from there to kv_indices.shape[0] are written as zeros (a TMA box past the last prefix row reads
    finite values).

    k_buffer/v_buffer: [slots, H_kv, D] of one dtype, any row/head strides, unit stride along D. kv_indices: [ΣP]
    int32/int64 slot numbers. With `v_is_k` (MLA: V is a view of K) only K is copied and V_g is K_g. No host
    synchronization: ΣP is kv_indices.shape[0].

    Raises:
        ValueError: a buffer whose last stride is not 1 (name and strides in the message); `first_heads` out of
            range.
    """
    for name, buf in (("k_buffer", k_buffer), ("v_buffer", v_buffer)):
        if buf.stride(2) != 1:
            raise ValueError(f"{name}: pre-gather needs unit stride along the head dim, got strides {buf.stride()}")
    heads = k_buffer.shape[1] if first_heads is None else first_heads
    if not 1 <= heads <= k_buffer.shape[1]:
        raise ValueError(f"first_heads: {first_heads} is not in [1, H_kv = {k_buffer.shape[1]}]")
    total = kv_indices.shape[0]
    k_dst = _workspace(k_buffer, "prefix_k", total)
    v_dst = k_dst if v_is_k else _workspace(v_buffer, "prefix_v", total)
    if total == 0:
        if zero is not None:
            refuse_replay("gather_prefix zeroes a buffer with a torch op")
            zero.zero_()
        return k_dst, v_dst
    kw, vw = k_buffer.shape[2], v_buffer.shape[2]
    block_c, block_t = BLOCK_C, BLOCK_T
    if first_heads is not None:  # the same 16 KiB bf16 tiles as fewer columns (leading heads) x more tokens
        block_c = min(BLOCK_C, triton.next_power_of_2(heads * max(kw, vw)))
        block_t = BLOCK_T * BLOCK_C // block_c
    launch(_gather_kv_kernel, (triton.cdiv(total, block_t),),
        k_buffer, v_buffer, k_dst, v_dst, kv_indices, total, k_buffer.stride(0), k_buffer.stride(1),
        v_buffer.stride(0), v_buffer.stride(1), zero if zero is not None else kv_indices,
        zero.numel() if zero is not None else 0, bound if bound is not None else kv_indices,
        bound.shape[0] - 1 if bound is not None else 0,
        ZERO_BLOCK=0 if zero is None else 1024, HAS_BOUND=bound is not None, K_HEAD_W=kw,
        K_ROW_W=k_buffer[0].numel(), K_COPY_W=heads * kw,
        V_HEAD_W=vw, V_ROW_W=v_buffer[0].numel(), V_COPY_W=heads * vw, HAS_V=not v_is_k,
        BLOCK_T=block_t, BLOCK_C=block_c, num_warps=4)
    return k_dst, v_dst
