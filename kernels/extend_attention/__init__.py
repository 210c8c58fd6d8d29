"""Extend attention (prefill with a paged prefix cache), SGLang ``extend_attention_fwd`` compatible.

``from kernels.extend_attention import extend_attention_fwd`` is the optimized kernel: it picks its
configuration from the chip limits (the process's, set by the caller: `kernels.chip.set_chip_limits`) and the
call's metadata. The baseline with the same
signature is ``kernels.extend_attention.baseline.extend_attention_fwd``.
"""

from kernels.extend_attention.tuned import extend_attention_fwd

__all__ = ["extend_attention_fwd"]
