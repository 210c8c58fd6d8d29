"""Stage 2 of the loop: roofline fraction and bottleneck class of every case, from the profile and timings.

Roofline floor (shared/reference/extend_attention.md, "Roofline floor"; Williams et al., "Roofline", CACM 2009):
``floor_us = 1e6 * max(flops / peak_flops[dtype], bytes / peak_bytes_per_s)`` with the task's compulsory
`flops(case)` and `bytes(case)` and the chip profile's spec peaks. The fraction of the floor a kernel reaches is
``floor_us / time_us`` (1.0 = at the floor).

Bottleneck classes, in the order they are tested:

- ``launch-overhead``: the floor is below one kernel launch (`launch_overhead_us`), so fixed launch and
  host-sync costs dominate whatever the kernel does.
- ``occupancy``: the kernel launches fewer programs than the chip has compute units (one partial wave), so
  most units idle; only decided when the program count of the current kernel is known.
- ``memory-bound`` / ``compute-bound``: arithmetic intensity ``flops / bytes`` below / above the chip's ridge
  point ``peak_flops / peak_bytes_per_s``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec

#: Typical launch latency of one GPU kernel, microseconds. CUDA C++ Best Practices Guide ("kernel launch
#: overhead ... a few microseconds"); used only to classify cases whose whole roofline floor is below it.
LAUNCH_OVERHEAD_US = 5.0

_PEAK_KEY = {"bfloat16": "bf16", "float16": "fp16", "float32": "tf32", "float64": "fp64"}

BOTTLENECKS = ("launch-overhead", "occupancy", "memory-bound", "compute-bound")


@dataclass(frozen=True)
class CaseDiagnosis:
    """Diagnosis of one case for the current best kernel.

    Attributes:
        case_id / case_class: the task case.
        time_us: measured time of the current best kernel (None when nothing was timed).
        floor_us: roofline floor in microseconds (None when the profile lacks a peak).
        roofline_fraction: floor_us / time_us, 1.0 = at the floor (None when either is unknown).
        intensity_flop_per_byte: compulsory FLOPs / compulsory bytes of the case.
        ridge_flop_per_byte: the chip's peak FLOP/s / peak bytes/s for the case's dtype (None if unknown).
        bound: ``memory-bound`` or ``compute-bound`` (roofline side of the case), ``unknown`` without peaks.
        bottleneck: one of `BOTTLENECKS` (or ``unknown``), the class patterns are ranked for.
        programs: programs the current kernel launches for this case (None if unknown).
        num_compute_units: from the profile (None if unknown).
    """

    case_id: str
    case_class: str
    time_us: float | None
    floor_us: float | None
    roofline_fraction: float | None
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float | None
    bound: str
    bottleneck: str
    programs: int | None = None
    num_compute_units: int | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line, e.g. ``decode: memory-bound, 5.4% of floor (8285 us vs 449 us)``."""
        if self.roofline_fraction is None:
            where = "not timed" if self.time_us is None else f"{self.time_us:.0f} us, floor unknown"
        else:
            where = f"{100 * self.roofline_fraction:.1f}% of floor ({self.time_us:.0f} us vs {self.floor_us:.0f} us)"
        return f"{self.case_id}: {self.bottleneck}, {where}"


def peak_key(dtype: str) -> str:
    """Profile `peak_tflops` key for a torch dtype name (``bfloat16`` -> ``bf16``; float32 runs as tf32).

    Raises:
        KeyError: dtype without a peak key.
    """
    return _PEAK_KEY[dtype]


def case_dtype(case: Case) -> str:
    """Input dtype name of a case (``params['dtype']``, default bfloat16)."""
    return str(case.params.get("dtype", "bfloat16"))


def roofline_floor_us(task: TaskSpec, case: Case, profile: HardwareProfile, dtype: str | None = None) -> float | None:
    """Roofline floor of `case` on the chip in microseconds, or None if a needed peak is unknown.

    Formula in the module docstring; `dtype` defaults to the case's dtype.
    """
    peak = profile.peak_flops(peak_key(dtype or case_dtype(case)))
    bandwidth = profile.peak_bytes_per_s()
    if peak is None or bandwidth is None:
        return None
    return 1e6 * max(task.flops(case) / peak, task.bytes(case) / bandwidth)


def ridge_flop_per_byte(profile: HardwareProfile, dtype: str) -> float | None:
    """Ridge point of the roofline, FLOP per byte: peak FLOP/s of `dtype` over peak bytes/s (None if unknown)."""
    peak, bandwidth = profile.peak_flops(peak_key(dtype)), profile.peak_bytes_per_s()
    return None if peak is None or not bandwidth else peak / bandwidth


def diagnose_case(task: TaskSpec, case: Case, profile: HardwareProfile, time_us: float | None,
                  programs: int | None = None, launch_overhead_us: float = LAUNCH_OVERHEAD_US) -> CaseDiagnosis:
    """Diagnose one case; `time_us` is the current best kernel's median time (None: not timed)."""
    dtype = case_dtype(case)
    floor = roofline_floor_us(task, case, profile, dtype)
    intensity = task.flops(case) / max(task.bytes(case), 1.0)
    ridge = ridge_flop_per_byte(profile, dtype)
    bound = "unknown" if ridge is None else ("memory-bound" if intensity < ridge else "compute-bound")
    units = profile.get("num_compute_units")
    units = int(units) if units else None
    if floor is not None and floor < launch_overhead_us:
        bottleneck = "launch-overhead"
    elif programs is not None and units is not None and programs < units:
        bottleneck = "occupancy"
    else:
        bottleneck = bound
    fraction = None
    if floor is not None and time_us:
        fraction = floor / time_us
    return CaseDiagnosis(case.id, case.case_class, time_us, floor, fraction, intensity, ridge, bound,
                         bottleneck, programs, units)


def diagnose(task: TaskSpec, cases: list[Case], profile: HardwareProfile, times_us: Mapping[str, float],
             programs: Mapping[str, int | None] | None = None) -> dict[str, CaseDiagnosis]:
    """`diagnose_case` for every case; `times_us` maps case id to time (missing: not timed)."""
    programs = programs or {}
    return {c.id: diagnose_case(task, c, profile, times_us.get(c.id), programs.get(c.id)) for c in cases}
