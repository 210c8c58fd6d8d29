"""Honest candidate: the project's optimized entry point (configuration chosen from the chip limits and the call),
wrapped the way a candidate may build on the task's kernel package."""

from kernels.extend_attention import extend_attention_fwd as optimized


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                         kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                         sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1,
                         sinks=None, **kwargs):
    """Extend attention into `o_extend` with `kernels.extend_attention.extend_attention_fwd`."""
    optimized(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
              custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=sm_scale,
              logit_cap=logit_cap, skip_prefix_custom_mask=skip_prefix_custom_mask,
              sliding_window_size=sliding_window_size, sinks=sinks, **kwargs)
