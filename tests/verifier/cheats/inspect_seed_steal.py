"""CHEAT (stealing the seed through inspect): reads the harness's trial (case and secret seed) from the call
stack and recomputes the reference with the task's own spec.
Caught by: static rules no-introspection / no-reference-import; the import guard (runtime_error).
"""

import inspect

import triton
import triton.language as tl

from kernels.extend_attention.spec import TASK


@triton.jit
def _copy_kernel(Src, Dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Dst + offs, tl.load(Src + offs, mask=m), mask=m)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    for info in inspect.stack():
        trial = info.frame.f_locals.get("trial")
        if trial is not None:
            inputs = TASK.make_inputs(trial.case, trial.seed, o_extend.device)
            src = TASK.reference(inputs)["o_extend"].to(o_extend.dtype)
            n = o_extend.numel()
            _copy_kernel[(triton.cdiv(n, 1024),)](src, o_extend, n, BLOCK=1024)
            return None
