"""The dispatch class of an extend-attention call: the one definition that family candidates (at every call, from
tensor metadata) and the agent (from a case's features, `family_space.ExtendAttentionFamily.dispatch_class`) use.

A class key is ``<bound>-<width>``:

- bound: ``memory`` when (extend rows per sequence) x (q heads per KV head) is below the chip's roofline ridge point
  (peak FLOP/s over peak bytes/s of the case's dtype), else ``compute``; ``any`` when the ridge is unknown. For
  P >> E the arithmetic intensity of extend attention is about G * E FLOP/byte in 16-bit types
  (shared/reference/extend_attention.md, "Roofline floor").
- width: `width_class` of the query/key head dim.
"""

from __future__ import annotations


def width_class(head_dim: int) -> str:
    """Head-width part of a class key: ``d64`` (D <= 64), ``d128`` (<= 128), ``d256`` (<= 256), else ``wide``.

    D <= 64 is a class of its own because its best tiles differ from D = 128's: 128x64 / 4 warps against 128x128 /
    8 warps, and a D = 128 improvement applied to both regressed the D = 64 case by 14 %. Sources: BENCHMARKS.md,
    'Kernel sweeps' and 'Agent loop'; SGLang's tile table also switches num_warps at D = 64.
    """
    return "d64" if head_dim <= 64 else "d128" if head_dim <= 128 else "d256" if head_dim <= 256 else "wide"


def dispatch_class(rows_per_sequence: float, group: int, head_dim: int, ridge_flop_per_byte: float | None) -> str:
    """Class key (module docstring) of a call with `rows_per_sequence` extend tokens per sequence (ΣE / B),
    GQA group `group` (H_q / H_kv) and query/key head dim `head_dim`, on a chip whose ridge point is
    `ridge_flop_per_byte` (FLOP/byte; None = unknown)."""
    width = width_class(head_dim)
    if ridge_flop_per_byte is None:
        return "any-" + width
    bound = "memory" if rows_per_sequence * group < ridge_flop_per_byte else "compute"
    return bound + "-" + width


def call_class(q_extend, k_extend, qo_indptr, ridge_flop_per_byte: float | None) -> str:
    """`dispatch_class` of a call, from tensor metadata only (no device-to-host copy).

    Shapes: q_extend [ΣE, H_q, D_qk], k_extend [ΣE, H_kv, D_qk], qo_indptr [B + 1].
    """
    batch = max(qo_indptr.shape[0] - 1, 1)
    return dispatch_class(q_extend.shape[0] / batch, q_extend.shape[1] // k_extend.shape[1], q_extend.shape[2],
                          ridge_flop_per_byte)
