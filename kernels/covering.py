"""Covering arrays: few rows over which every pair of binary features takes each of its four value pairs.

The verifier's hidden trials use them so that a kernel which cuts work only when two settings take given values
(say non-causal AND float32) meets those two values together, at a size where the cut shows, in every
verification (kernels/extend_attention/long_trials.py, kernels/splitk_gemm/cases.py).
"""

from __future__ import annotations

import itertools
import math

__all__ = ["covering_rows"]


def covering_rows(k: int) -> tuple[tuple[bool, ...], ...]:
    """Rows of a binary covering array of strength 2 with `k` columns: for any two columns, each of the value
    pairs (F, F), (F, T), (T, F), (T, T) is in some row. N rows, the fewest with C(N-1, ceil(N/2)) >= k (7 rows
    for 11-15 columns): row 0 all False, and column j the j-th ceil(N/2)-subset of rows 1..N-1 (Kleitman and
    Spencer 1973; two distinct subsets of one size each hold a row the other lacks, and two of size > (N-1)/2
    share a row).

    Raises:
        ValueError: `k` < 1.
    """
    if k < 1:
        raise ValueError(f"a covering array needs at least one column, got {k}")
    n = 2
    while math.comb(n - 1, -(-n // 2)) < k:
        n += 1
    subsets = list(itertools.combinations(range(1, n), -(-n // 2)))[:k]
    return tuple(tuple(r in s for s in subsets) for r in range(n))
