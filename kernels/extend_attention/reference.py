"""Float32 torch reference for extend attention (prefill with a paged prefix cache).

Semantics follow SGLang's ``extend_attention_fwd`` (shared/reference/extend_attention.md): query row i of
sequence b sits at position ``P_b + i``; it sees every prefix key (unless a custom mask without
``skip_prefix_custom_mask`` or a sliding window hides it) and, causally, the new keys up to itself.
"""

from __future__ import annotations

import math

import torch

#: Query rows per reference chunk are chosen so one chunk's score matrix stays under this many elements.
_MAX_SCORE_ELEMENTS = 1 << 27


def _visible_mask(
    num_rows: int,
    row_start: int,
    prefix_len: int,
    extend_len: int,
    is_causal: bool,
    custom_rows: torch.Tensor | None,
    skip_prefix_custom_mask: bool,
    sliding_window_size: int,
    device: torch.device,
    skip_prefix: bool = False,
    skip_extend: bool = False,
) -> torch.Tensor:
    """Bool [rows, P + E]: True where query row (row_start + r) may attend key j."""
    rows = torch.arange(row_start, row_start + num_rows, device=device)[:, None]
    keys = torch.arange(prefix_len + extend_len, device=device)[None, :]
    is_prefix = keys < prefix_len
    if custom_rows is not None:
        visible = custom_rows.to(torch.bool)
        if skip_prefix_custom_mask:
            visible = visible | is_prefix
    elif is_causal:
        visible = is_prefix | (keys - prefix_len <= rows)
    else:
        visible = torch.ones(num_rows, prefix_len + extend_len, dtype=torch.bool, device=device)
    if sliding_window_size is not None and sliding_window_size > 0:
        visible = visible & (keys >= rows + prefix_len - sliding_window_size)
    if skip_prefix:
        visible = visible & ~is_prefix
    if skip_extend:
        visible = visible & is_prefix
    return visible


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    visible: torch.Tensor,
    key_scale: torch.Tensor,
    logit_cap: float,
    sink: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q [rows, H_q, D], k [keys, H_q, D], v [keys, H_q, Dv], visible [rows, keys], key_scale [keys] (logit
    multiplier per key) -> (out [rows, H_q, Dv], natural-log LSE [rows, H_q] of the softmax denominator, sink
    included; -inf for a row with neither a visible key nor a sink)."""
    scores = torch.einsum("rhd,khd->hrk", q, k) * key_scale
    if logit_cap > 0:
        scores = logit_cap * torch.tanh(scores / logit_cap)
    scores = scores.masked_fill(~visible[None], float("-inf"))
    if sink is not None:
        scores_lse = torch.cat([scores, sink[:, None, None].expand(-1, scores.shape[1], 1)], dim=-1)
    else:
        scores_lse = scores
    lse = torch.logsumexp(scores_lse, dim=-1) if scores_lse.shape[-1] else scores_lse.new_full(
        scores_lse.shape[:-1], float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    if sink is not None:
        row_max = torch.maximum(row_max, sink[:, None, None])
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)
    denom = weights.sum(dim=-1, keepdim=True)
    if sink is not None:
        denom = denom + torch.exp(sink[:, None, None] - row_max)
    out = torch.einsum("hrk,khd->hrd", weights, v)
    out = torch.where(denom > 0, out / denom.clamp_min(torch.finfo(out.dtype).tiny), torch.zeros_like(out))
    return out.permute(1, 0, 2), lse.permute(1, 0)


def reference_extend_attention(
    q_extend: torch.Tensor,
    k_extend: torch.Tensor,
    v_extend: torch.Tensor,
    k_buffer: torch.Tensor,
    v_buffer: torch.Tensor,
    qo_indptr: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    custom_mask: torch.Tensor | None = None,
    is_causal: bool = True,
    mask_indptr: torch.Tensor | None = None,
    sm_scale: float | None = None,
    logit_cap: float = 0.0,
    skip_prefix_custom_mask: bool = True,
    sliding_window_size: int = -1,
    sinks: torch.Tensor | None = None,
    compute_dtype: torch.dtype = torch.float32,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    skip_prefix: bool = False,
    skip_extend: bool = False,
    identity_kv_indices: bool = False,
    window_kv_offsets: torch.Tensor | None = None,
    return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Exact extend attention in `compute_dtype` (float32 or float64).

    Args:
        q_extend: [total_extend_tokens, num_q_heads, head_dim_qk].
        k_extend: [total_extend_tokens, num_kv_heads, head_dim_qk].
        v_extend: [total_extend_tokens, num_kv_heads, head_dim_v].
        k_buffer: [num_slots, num_kv_heads, head_dim_qk]; v_buffer: [num_slots, num_kv_heads, head_dim_v].
        qo_indptr: [batch + 1] int; kv_indptr: [batch + 1] int; kv_indices: [total_prefix_tokens] int slots.
        custom_mask: flat bool/uint8, per sequence row-major [E_b, P_b + E_b] at mask_indptr[b]; or None.
        sm_scale: logit scale; None means 1/sqrt(head_dim_qk).
        logit_cap: 0 = off, else logits -> cap * tanh(logits / cap) after scaling.
        sliding_window_size: W <= 0 off; else key visible iff key_pos >= query_pos - W.
        sinks: [num_q_heads] per-head sink logit added to the softmax denominator, or None.
        k_scale, v_scale: prefix keys' logits times sm_scale * k_scale, their values times v_scale (SGLang's
            FP8 KV-cache dequantization scales).
        skip_prefix, skip_extend: hide every prefix key / every extend key (k_extend, v_extend may then have 0 rows).
        identity_kv_indices: prefix token t of sequence b sits at row kv_indptr[b] + t of the buffers (kv_indices
            unread).
        window_kv_offsets: [batch] ints or None; with a custom mask and a sliding window, sequence b's mask is
            [E_b, off_b + P_b + E_b] and its first off_b columns are not used (SGLang 0.5.23).
        return_lse: also return the natural-log sum of exponentials of each row's visible logits (sink included).

    Returns:
        [total_extend_tokens, num_q_heads, head_dim_v] in `compute_dtype`; rows with no visible key are 0. With
        `return_lse`, (that, lse [total_extend_tokens, num_q_heads] in `compute_dtype`; -inf for an empty row).

    Raises:
        ValueError: num_q_heads is not a multiple of num_kv_heads, or a custom mask lacks mask_indptr.
    """
    num_q_heads, head_dim = q_extend.shape[1], q_extend.shape[2]
    num_kv_heads = k_extend.shape[1]
    if num_q_heads % num_kv_heads:
        raise ValueError(f"num_q_heads={num_q_heads} is not a multiple of num_kv_heads={num_kv_heads}")
    if custom_mask is not None and mask_indptr is None:
        raise ValueError("custom_mask given without mask_indptr")
    group = num_q_heads // num_kv_heads
    scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)
    device = q_extend.device
    out = torch.zeros(q_extend.shape[0], num_q_heads, v_extend.shape[2], dtype=compute_dtype, device=device)
    lse = torch.full((q_extend.shape[0], num_q_heads), float("-inf"), dtype=compute_dtype, device=device)
    qo, kvp = qo_indptr.tolist(), kv_indptr.tolist()
    mask_ptr = mask_indptr.tolist() if mask_indptr is not None else None
    offsets = None
    if window_kv_offsets is not None and custom_mask is not None and sliding_window_size > 0:
        offsets = window_kv_offsets.tolist()
    sink = sinks.to(compute_dtype) if sinks is not None else None
    for b in range(len(qo) - 1):
        e_start, e_len = qo[b], qo[b + 1] - qo[b]
        if e_len == 0:
            continue
        if identity_kv_indices:
            slots = torch.arange(kvp[b], kvp[b + 1], device=k_buffer.device)
        else:
            slots = kv_indices[kvp[b] : kvp[b + 1]].long()
        prefix_len = slots.numel()
        k_new, v_new = k_extend[e_start : e_start + e_len], v_extend[e_start : e_start + e_len]
        if k_extend.shape[0] == 0:  # skip_extend with empty k_extend / v_extend: never visible
            k_new = k_extend.new_zeros(e_len, *k_extend.shape[1:])
            v_new = v_extend.new_zeros(e_len, *v_extend.shape[1:])
        k = torch.cat([k_buffer[slots].to(compute_dtype), k_new.to(compute_dtype)])
        v = torch.cat([v_buffer[slots].to(compute_dtype) * v_scale, v_new.to(compute_dtype)])
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        keys = prefix_len + e_len
        key_scale = torch.full((keys,), scale, dtype=compute_dtype, device=device)
        key_scale[:prefix_len] = scale * k_scale
        chunk = max(1, _MAX_SCORE_ELEMENTS // max(1, num_q_heads * keys))
        for r0 in range(0, e_len, chunk):
            r1 = min(e_len, r0 + chunk)
            custom_rows = None
            if custom_mask is not None:
                off = offsets[b] if offsets is not None else 0
                flat = custom_mask[mask_ptr[b] : mask_ptr[b] + e_len * (off + keys)].view(e_len, off + keys)
                custom_rows = flat[r0:r1, off:]
            visible = _visible_mask(
                r1 - r0, r0, prefix_len, e_len, is_causal, custom_rows,
                skip_prefix_custom_mask, sliding_window_size, device, skip_prefix, skip_extend,
            )
            q = q_extend[e_start + r0 : e_start + r1].to(compute_dtype)
            rows_out, rows_lse = _attend(q, k, v, visible, key_scale, logit_cap, sink)
            out[e_start + r0 : e_start + r1] = rows_out
            lse[e_start + r0 : e_start + r1] = rows_lse
    return (out, lse) if return_lse else out
