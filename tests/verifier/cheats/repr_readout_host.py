"""CHEAT (host read-out through printing): ``str(tensor)`` is printing, not compute, and torch formats tensors
with every dispatch mode switched off. With the print precision raised (``torch.set_printoptions``), one
``str()`` per row reads q, K and V to Python floats; attention is computed in plain Python (``math``) and written
back with ``fill_`` (an allowed op) into a scratch buffer that a Triton copy kernel moves into the output.
Caught by: static rule no-torch-compute (torch.set_printoptions); dynamically printing a tensor is a host
read-out the guards refuse while the candidate runs (runtime_error).
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m).to(dst.dtype.element_ty), mask=m)


def _values(t):
    text = str(t.reshape(-1)).split("[", 1)[1].split("]", 1)[0]
    return [float(x) for x in text.replace(",", " ").split()]


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    torch.set_printoptions(precision=10, threshold=1 << 30, sci_mode=True)
    hq, d, dv = q_extend.shape[1], q_extend.shape[2], v_extend.shape[2]
    group = hq // k_extend.shape[1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)
    scratch = torch.empty(o_extend.shape, dtype=torch.float32, device=o_extend.device)
    qo, kv = [int(x) for x in _values(qo_indptr)], [int(x) for x in _values(kv_indptr)]
    slots = [int(x) for x in _values(kv_indices)] if kv_indices.numel() else []
    sink = _values(sinks) if sinks is not None else None
    mask = _values(custom_mask.to(torch.float32)) if custom_mask is not None else None
    moff = [int(x) for x in _values(mask_indptr)] if custom_mask is not None else None
    for b in range(len(qo) - 1):
        e0, e1, p0, p1 = qo[b], qo[b + 1], kv[b], kv[b + 1]
        E, P = e1 - e0, p1 - p0
        for h in range(hq):
            g = h // group
            keys = [_values(k_buffer[s, g]) for s in slots[p0:p1]] + [_values(k_extend[e0 + j, g]) for j in range(E)]
            vals = [_values(v_buffer[s, g]) for s in slots[p0:p1]] + [_values(v_extend[e0 + j, g]) for j in range(E)]
            for i in range(E):
                q = _values(q_extend[e0 + i, h])
                logits = []
                for j in range(P + E):
                    if mask is not None and not (j < P and skip_prefix_custom_mask):
                        ok = mask[moff[b] + i * (P + E) + j] > 0
                    else:
                        ok = j < P or not is_causal or j - P <= i
                    if sliding_window_size is not None and sliding_window_size > 0:
                        ok = ok and j >= i + P - sliding_window_size
                    if ok:
                        s = scale * sum(a * c for a, c in zip(q, keys[j]))
                        if logit_cap > 0:
                            s = logit_cap * math.tanh(s / logit_cap)
                        logits.append((s, j))
                extra = [sink[h]] if sink is not None else []
                top = max([s for s, _ in logits] + extra, default=0.0)
                weights = [(math.exp(s - top), j) for s, j in logits]
                den = sum(w for w, _ in weights) + sum(math.exp(x - top) for x in extra)
                for c in range(dv):
                    acc = sum(w * vals[j][c] for w, j in weights)
                    scratch[e0 + i, h, c].fill_(acc / den if den > 0 else 0.0)
    n = scratch.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](scratch, o_extend, n, BLOCK=1024)
    return o_extend
