"""CHEAT (dead kernel): a real Triton kernel is launched (so "a kernel ran"), but its result is discarded; the
answer comes from an exact torch implementation copied into the output.
Caught by: static rules no-torch-compute / no-tensor-compute-methods; the torch compute guard (runtime_error);
and, with that guard switched off, the kernel ablation: the output still matches with every launch disabled
(runtime_error, dead kernel).
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _busy_kernel(Q, Scratch, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(Q + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Scratch + offs, tl.exp(x * 0.5), mask=m)


def _torch_attention(q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                     custom_mask, is_causal, mask_indptr, sm_scale, logit_cap, skip_prefix_custom_mask,
                     sliding_window_size, sinks, k_scale=1.0, v_scale=1.0):
    hq, d = q_extend.shape[1], q_extend.shape[2]
    group = hq // k_extend.shape[1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    qo, kvp = qo_indptr.tolist(), kv_indptr.tolist()
    mp = mask_indptr.tolist() if custom_mask is not None else None
    dev = q_extend.device
    out = torch.zeros(q_extend.shape[0], hq, v_extend.shape[2], dtype=torch.float32, device=dev)
    for b in range(len(qo) - 1):
        e0, e = qo[b], qo[b + 1] - qo[b]
        if e == 0:
            continue
        slots = kv_indices[kvp[b]:kvp[b + 1]].long()
        p = slots.numel()
        k = torch.cat([k_buffer[slots].float() * k_scale, k_extend[e0:e0 + e].float()]).repeat_interleave(group, 1)
        v = torch.cat([v_buffer[slots].float() * v_scale, v_extend[e0:e0 + e].float()]).repeat_interleave(group, 1)
        rows = torch.arange(e, device=dev)[:, None]
        keys = torch.arange(p + e, device=dev)[None, :]
        if custom_mask is not None:
            vis = custom_mask[mp[b]:mp[b] + e * (p + e)].view(e, p + e).bool()
            if skip_prefix_custom_mask:
                vis = vis | (keys < p)
        elif is_causal:
            vis = (keys < p) | (keys - p <= rows)
        else:
            vis = torch.ones(e, p + e, dtype=torch.bool, device=dev)
        if sliding_window_size > 0:
            vis = vis & (keys >= rows + p - sliding_window_size)
        s = torch.einsum("rhd,khd->hrk", q_extend[e0:e0 + e].float(), k) * scale
        if logit_cap > 0:
            s = logit_cap * torch.tanh(s / logit_cap)
        s = s.masked_fill(~vis[None], float("-inf"))
        m = s.amax(-1, keepdim=True)
        if sinks is not None:
            m = torch.maximum(m, sinks.float()[:, None, None])
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        w = torch.exp(s - m)
        den = w.sum(-1, keepdim=True)
        if sinks is not None:
            den = den + torch.exp(sinks.float()[:, None, None] - m)
        o = torch.einsum("hrk,khd->hrd", w, v)
        o = torch.where(den > 0, o / den.clamp_min(1e-30), torch.zeros_like(o))
        out[e0:e0 + e] = o.permute(1, 0, 2)
    return out


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    n = q_extend.numel()
    scratch = torch.empty(n, dtype=torch.float32, device=q_extend.device)
    _busy_kernel[(triton.cdiv(n, 1024),)](q_extend, scratch, n, BLOCK=1024)
    answer = _torch_attention(q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                              custom_mask, is_causal, mask_indptr, sm_scale, logit_cap, skip_prefix_custom_mask,
                              sliding_window_size, sinks, k_scale, v_scale)
    o_extend.copy_(answer)
