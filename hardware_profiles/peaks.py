"""Peaks of a chip for an input dtype: the one definition of the dtype -> profile-peak mapping and of the roofline
ridge point, used by the roofline floor (agent.roofline), the dispatch class of family candidates
(agent.family_space) and the pattern formulas' ``peak_flops`` / ``ridge`` (knowledge.variables).

Ridge point = peak FLOP/s / peak bytes/s (Williams, Waterman, Patterson, "Roofline", CACM 52(4), 2009): a kernel
of arithmetic intensity below it is bound by memory bandwidth, above it by arithmetic throughput.
"""

from __future__ import annotations

from hardware_profiles.schema import HardwareProfile

#: Profile peak keys (`HardwareProfile.peak_tflops`) for an input dtype name. float32 inputs may run on TF32 tensor
#: cores where a task allows it, so the float32 peak is the larger of the two: the roofline floor must lie below
#: any honest timing.
PEAK_KEYS: dict[str, tuple[str, ...]] = {
    "bfloat16": ("bf16",), "float16": ("fp16",), "float32": ("tf32", "fp32"), "float64": ("fp64",),
}


def dtype_peak_flops(profile: HardwareProfile, dtype: str) -> float | None:
    """Largest dense peak, FLOP/s, that `profile` gives for input dtype `dtype` (``"bfloat16"``...), or None.

    Raises:
        ValueError: `dtype` is not a key of `PEAK_KEYS`.
    """
    if dtype not in PEAK_KEYS:
        raise ValueError(f"dtype {dtype!r} has no peak mapping; expected one of {sorted(PEAK_KEYS)}")
    known = [v for v in (profile.peak_flops(k) for k in PEAK_KEYS[dtype]) if v]
    return max(known) if known else None


def ridge_flop_per_byte(profile: HardwareProfile, dtype: str) -> float | None:
    """Ridge point of `profile` for input dtype `dtype`, FLOP/byte (`dtype_peak_flops` / peak bytes/s); None when
    either peak is unknown.

    Raises:
        ValueError: `dtype` is not a key of `PEAK_KEYS`.
    """
    flops, bandwidth = dtype_peak_flops(profile, dtype), profile.peak_bytes_per_s()
    return flops / bandwidth if flops and bandwidth else None
