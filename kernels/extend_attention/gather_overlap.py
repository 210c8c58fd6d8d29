"""Overlap the prefix pre-gather with attention: copy the first part of the prefix, then run the attention of the
sequences whose prefix lies inside it while a side stream copies the rest, then the remaining sequences.

The pre-gather (`prefix_gather.py`) is memory-bound and the attention after it compute-bound, so run one after the
other they add up (mixed batch on the H200: 135 of 659 µs is the copy). With ``gather_overlap = k`` the family
copies prefix rows [0, ΣP / k) first on the caller's stream; a side stream (high priority, so the scheduler places
its copy programs first as attention programs retire) then copies rows [ΣP / k, ΣP) while the caller's stream runs
the attention launch restricted to sequences whose prefix ends at or before row ΣP / k; the caller's stream then
waits for the side copy and runs the launch over the other sequences. The split point is a row count from
tensor metadata (ΣP = kv_indices.shape[0]), never a value read back from the device: which sequences fall in
which launch is decided on the device from kv_indptr (`_family_fwd_kernel`'s pre_end bounds).

Ordering: the side stream first waits for everything already queued on the caller's stream (inputs ready, the
previous call's reads of the shared workspace done), and the caller's stream waits for the side copy before its
second launch, so everything queued after the call on the caller's stream (and `torch.cuda` timing events there)
sees the whole call. On CPU tensors (the interpreter) the same steps run in order on one stream.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from kernels.extend_attention.prefix_gather import copy_prefix_rows

_SIDE_STREAMS: dict[tuple[int | None, int], torch.cuda.Stream] = {}

#: Upper pre_end bound meaning "every sequence" (row counts are below 2^31: kv_indices is indexed in int32 rows).
ALL_ROWS = 2**31 - 1


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    """One high-priority side stream per (device, caller stream), created once."""
    key = (device.index, torch.cuda.current_stream(device).cuda_stream)
    if key not in _SIDE_STREAMS:
        _, highest = torch.cuda.Stream.priority_range()
        _SIDE_STREAMS[key] = torch.cuda.Stream(device=device, priority=highest)
    return _SIDE_STREAMS[key]


def split_row(total_prefix: int, parts: int) -> int:
    """First-part size in prefix rows: ΣP // parts (ΣP when `parts` < 2, i.e. no overlap)."""
    return total_prefix // parts if parts >= 2 else total_prefix


def gather_then_attend(k_buffer: torch.Tensor, v_buffer: torch.Tensor, kv_indices: torch.Tensor,
                       k_dst: torch.Tensor, v_dst: torch.Tensor, v_is_k: bool, parts: int, attend) -> None:
    """Pre-gather the prefix into (`k_dst`, `v_dst`) and run `attend(pre_end_lo, pre_end_hi)` (one attention launch
    over the sequences whose prefix ends in rows (lo, hi]) so that the copy of the second part overlaps the first
    launch when `parts` >= 2 on a GPU. Shapes as `prefix_gather.gather_prefix`; `attend` may raise (e.g. Triton's
    OutOfResources at compile time) before it queues anything, and the exception propagates."""
    total = kv_indices.shape[0]
    first = split_row(total, parts)
    copy_prefix_rows(k_buffer, v_buffer, kv_indices, k_dst, v_dst, 0, first, v_is_k)
    if first >= total:
        attend(-1, ALL_ROWS)
        return
    device = kv_indices.device
    side = _side_stream(device) if device.type == "cuda" else None
    if side is not None:
        side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side) if side is not None else nullcontext():
        copy_prefix_rows(k_buffer, v_buffer, kv_indices, k_dst, v_dst, first, total, v_is_k)
    attend(-1, first)
    if side is not None:
        torch.cuda.current_stream(device).wait_stream(side)
    attend(first, ALL_ROWS)
