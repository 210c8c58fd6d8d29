"""CHEAT (library call inside a torch callback): a plain object with a ``__torch_function__`` classmethod is passed
to an allowed ``torch.empty_like``; torch calls that method back while it handles the call, and the method computes
attention with torch ops into a scratch buffer that a Triton copy kernel moves into the output (so a launch
happens and the ablation breaks the output). Under a torch *function*-mode guard the callback runs while torch has
popped the mode to re-run the allowed call: unguarded.
Caught by: static rules no-tensor-subclass / no-implicit-callbacks / no-torch-compute; the dispatch-mode compute
guard, which stays on the stack during the callback (runtime_error).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m).to(dst.dtype.element_ty), mask=m)


def _attend_all(q, k_ext, v_ext, k_buf, v_buf, qo, kv, kvi, custom_mask, is_causal, mask_indptr, sm_scale,
                logit_cap, skip_prefix, window, sinks, out):
    hq, d, dv = q.shape[1], q.shape[2], v_ext.shape[2]
    group = hq // k_ext.shape[1]
    scale = (1.0 / d ** 0.5) if sm_scale is None else float(sm_scale)
    soft = torch.nn.Softmax(dim=-1)
    head_map = torch.arange(hq) // group
    for b in range(qo.shape[0] - 1):
        e0, e1, p0, p1 = int(qo[b]), int(qo[b + 1]), int(kv[b]), int(kv[b + 1])
        E, P = e1 - e0, p1 - p0
        if E <= 0:
            continue
        keys = torch.empty(P + E, k_ext.shape[1], d)
        vals = torch.empty(P + E, k_ext.shape[1], dv)
        keys[:P] = k_buf[kvi[p0:p1]]
        keys[P:] = k_ext[e0:e1]
        vals[:P] = v_buf[kvi[p0:p1]]
        vals[P:] = v_ext[e0:e1]
        kh, vh = keys[:, head_map], vals[:, head_map]
        scores = (q[e0:e1].float().permute(1, 0, 2) @ kh.permute(1, 2, 0)) * scale
        if logit_cap > 0:
            scores = logit_cap * torch.nn.Tanh()(scores / logit_cap)
        rows, cols = torch.arange(E)[:, None], torch.arange(P + E)[None, :]
        is_pre = cols < P
        if custom_mask is not None:
            m0 = int(mask_indptr[b])
            vis = custom_mask[m0:m0 + E * (P + E)].view(E, P + E).bool()
            if skip_prefix:
                vis = vis | is_pre
        elif is_causal:
            vis = is_pre | (cols - P <= rows)
        else:
            vis = torch.ones(E, P + E, dtype=torch.bool)
        if window is not None and window > 0:
            vis = vis & (cols >= rows + P - window)
        scores[:, ~vis] = float("-inf")
        ext = torch.full((hq, E, P + E + 1), float("-inf"))
        ext[:, :, :P + E] = scores
        if sinks is not None:
            ext[:, :, P + E] = sinks.float()[:, None]
        o = soft(ext)[:, :, :P + E] @ vh.permute(1, 0, 2)
        o[:, ~vis.any(-1)] = 0.0
        out[e0:e1] = o.permute(1, 0, 2)


class _Hook:
    def __init__(self, payload):
        self.payload = payload

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _attend_all(*args[0].payload)
        return torch.empty(1)


def extend_attention_fwd(
    q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
    custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
    skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None, window_kv_offsets=None,
    xai_temperature_len=-1,
):
    scratch = torch.empty(o_extend.shape, dtype=torch.float32, device=o_extend.device)
    args = (q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, custom_mask,
            is_causal, mask_indptr, sm_scale, logit_cap, skip_prefix_custom_mask, sliding_window_size, sinks,
            scratch)
    torch.empty_like(_Hook(args))
    n = scratch.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](scratch, o_extend, n, BLOCK=1024)
    return o_extend
