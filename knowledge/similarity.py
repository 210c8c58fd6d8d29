"""Chip similarity: how much evidence measured on one chip says about another.

Features (catalog ``scoring.similarity_features``): compute units, shared memory per block, the
bandwidth-to-FLOPs ratio (bytes/s per FLOP/s, which places the ridge point) and the warp/wavefront width.
Per feature known on both chips the similarity is ``min(a, b) / max(a, b)``; a feature unknown on either chip
contributes ``unknown_feature_similarity``; the chip similarity is the geometric mean over the features, and 1.0
for the same chip name. Heuristics come from profile numbers, never from vendor names (DESIGN.md, style 6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hardware_profiles.schema import HardwareProfile

#: Dtypes tried, in order, for the FLOP/s peak of the bandwidth-to-FLOPs feature.
FEATURE_PEAK_DTYPES = ("bf16", "fp16", "tf32", "fp32")

ChipFeatures = dict[str, float | None]


def chip_features(profile: HardwareProfile | None) -> ChipFeatures:
    """Similarity features of `profile` (all ``None`` without a profile).

    Returns:
        ``{"num_compute_units", "smem_per_block_kb", "bw_per_flop" (bytes/s per FLOP/s), "warp_size"}``.
    """
    if profile is None:
        return {"num_compute_units": None, "smem_per_block_kb": None, "bw_per_flop": None, "warp_size": None}
    bw = profile.peak_bytes_per_s()
    peak = next((profile.peak_flops(d) for d in FEATURE_PEAK_DTYPES if profile.peak_flops(d)), None)
    return {
        "num_compute_units": profile.get("num_compute_units"),
        "smem_per_block_kb": profile.get("smem_per_block_kb"),
        "bw_per_flop": bw / peak if bw and peak else None,
        "warp_size": profile.get("warp_size"),
    }


def chip_similarity(chip_a: str, features_a: Mapping[str, float | None], chip_b: str,
                    features_b: Mapping[str, float | None], features: Sequence[str],
                    unknown_similarity: float) -> float:
    """Similarity in (0, 1] of two chips from their features (1.0 for the same chip name, case-insensitive)."""
    if chip_a.lower() == chip_b.lower():
        return 1.0
    if not features:
        return unknown_similarity
    logs = []
    for name in features:
        a, b = features_a.get(name), features_b.get(name)
        if a is None or b is None or a <= 0 or b <= 0:
            s = unknown_similarity
        else:
            s = min(a, b) / max(a, b)
        logs.append(math.log(max(s, 1e-9)))
    return math.exp(sum(logs) / len(logs))
