"""Prefix pre-gather: copy the prefix K/V rows named by kv_indices into contiguous per-sequence order.

The family kernel reads the prefix of every sequence through kv_indices (a paged KV cache with page size 1): each
K/V tile is a gather whose row addresses come from a load the tile's loads depend on. With ``pregather`` the
family first copies those rows once into a contiguous workspace (``K_g[t] = K_buf[kv_indices[t]]`` for t in
[0, ΣP)), a memory-bound pass of 2 x ΣP x H_kv x (D_qk + D_v) x elem bytes, and the attention kernel then walks
the prefix like the extend keys (row t of sequence b at kv_indptr[b] + t). It pays off where each prefix row is
read by many query rows (compute-bound chunked prefill: 2048 query rows per 32768-key prefix), never in decode.

The workspace is reused across calls of the same size class (as the split-KV partials, `workspace.py`); every row a
call reads is written earlier in the same call.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.extend_attention.workspace import pooled


@triton.jit
def _gather_rows_kernel(src, dst, kv_indices, total, stride_st, stride_sh, WIDTH: tl.constexpr,
                        BLOCK_T: tl.constexpr, BLOCK_W: tl.constexpr):
    """dst[t, h, :WIDTH] = src[kv_indices[t], h, :WIDTH] for BLOCK_T rows t of one head h (dst contiguous)."""
    head = tl.program_id(1)
    heads = tl.num_programs(1)
    offs_t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_w = tl.arange(0, BLOCK_W)
    t_ok = offs_t < total
    slots = tl.load(kv_indices + offs_t, mask=t_ok, other=0).to(tl.int64)
    ok = t_ok[:, None] & (offs_w < WIDTH)[None, :]
    rows = tl.load(src + slots[:, None] * stride_st + head * stride_sh + offs_w[None, :], mask=ok)
    out = (offs_t.to(tl.int64)[:, None] * heads + head) * WIDTH + offs_w[None, :]
    tl.store(dst + out, rows, mask=ok)


def gather_rows(src: torch.Tensor, kv_indices: torch.Tensor, slot: int) -> torch.Tensor:
    """Contiguous ``[ΣP, H, W]`` copy of ``src[kv_indices]`` (src: [slots, H, W], any row/head strides, unit stride
    along W) in the reusable workspace `slot` (0: K, 1: V). No host synchronization: ΣP is kv_indices.shape[0]."""
    total, heads, width = kv_indices.shape[0], src.shape[1], src.shape[2]
    dst = pooled(src.device, src.dtype, f"prefix_{'kv'[slot]}", total * heads * width).view(total, heads, width)
    if total == 0:
        return dst
    block_w = triton.next_power_of_2(width)
    block_t = max(1, min(64, 8192 // block_w))
    _gather_rows_kernel[(triton.cdiv(total, block_t), heads)](
        src, dst, kv_indices, total, src.stride(0), src.stride(1), WIDTH=width, BLOCK_T=block_t, BLOCK_W=block_w,
        num_warps=4)
    return dst
