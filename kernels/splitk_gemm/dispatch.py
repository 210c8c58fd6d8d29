"""The dispatch class of a split-K GEMM call: the one definition that family candidates (at every call, from tensor
metadata, `call_class`) and the agent (from a case's features, `space.SplitKGemmFamily.dispatch_class`) use.

A class key is ``<rows>-<shape>``:
- rows: ``m1`` (M <= `config.GEMV_OFFER_ROWS`: a one-row weight stream, where the GEMV mode is offered), ``m16``
  (M <= 16),
  ``m64`` (M <= 64), ``m128`` (M <= 128), else ``mbig``: the tuned rules' BLOCK_M and warps follow M
  (`tuned.choose_config`);
- shape: ``deep`` when K >= N (few column tiles and a long reduction: where split-K pays), else ``wide``.
The split count itself is sized per call from the chip's compute units (split_k = 0), so one configuration of a
class serves every size in it on any chip. Every class is memory-bound on current GPUs (intensity ~ M FLOP/byte in
16-bit types, below the ridge point for M <= 128), so the ridge point does not enter the key.
"""

from __future__ import annotations

from kernels.splitk_gemm.config import GEMV_OFFER_ROWS


def dispatch_class(m: int, n: int, k: int) -> str:
    """Class key (module docstring) of a call A [m, k] @ B [n, k]^T."""
    rows = "m1" if m <= GEMV_OFFER_ROWS else "m16" if m <= 16 else "m64" if m <= 64 else "m128" if m <= 128 else "mbig"
    return f"{rows}-{'deep' if k >= n else 'wide'}"


def call_class(a, b, ridge_flop_per_byte: float | None = None) -> str:
    """`dispatch_class` of a call from tensor metadata only: a [M, K], b [N, K] (`ridge_flop_per_byte` is accepted
    for the contract's call shape and not used: see the module docstring)."""
    return dispatch_class(a.shape[0], b.shape[0], a.shape[1])
