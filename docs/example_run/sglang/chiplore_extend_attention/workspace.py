"""Preallocated split-KV workspace: partial outputs and log-sum-exps, reused across calls.

One buffer pair per (device, stream); it grows to the next power-of-two size class when a call needs more and
is otherwise reused as is, so steady-state calls allocate nothing. Every slot a call reads is written earlier
in the same call (each split writes its partial, empty ones as (0, -inf)), so stale contents never leak.
Calls on one stream are ordered, so sharing a buffer between them is safe.
"""

from __future__ import annotations

import torch

_POOL: dict[tuple[str, int | None, int], tuple[torch.Tensor, torch.Tensor]] = {}


def _stream_id(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def _size_class(n: int) -> int:
    return 1 << max(0, (max(1, n) - 1).bit_length())


def get_workspace(device: torch.device, splits: int, tokens: int, heads: int, head_dim_v: int):
    """Views (mid_o [splits, tokens, heads, head_dim_v] fp32, mid_l [splits, tokens, heads] fp32).

    Splits == 1 needs no partials: tiny placeholders are returned (never read).
    """
    if splits <= 1:
        tokens, heads, head_dim_v = 1, 1, 1
    key = (device.type, device.index, _stream_id(device))
    need_o = splits * tokens * heads * head_dim_v
    need_l = splits * tokens * heads
    buf_o, buf_l = _POOL.get(key, (None, None))
    if buf_o is None or buf_o.numel() < need_o or buf_l.numel() < need_l:
        buf_o = torch.empty(_size_class(need_o), dtype=torch.float32, device=device)
        buf_l = torch.empty(_size_class(need_l), dtype=torch.float32, device=device)
        _POOL[key] = (buf_o, buf_l)
    return (buf_o[:need_o].view(splits, tokens, heads, head_dim_v), buf_l[:need_l].view(splits, tokens, heads))
