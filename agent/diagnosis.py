"""Stage 2 of the loop: roofline fraction and bottleneck class of every case, from the profile and timings.

The roofline arithmetic and the bottleneck rules are `agent.roofline`'s (Williams et al., "Roofline", CACM 2009):
``floor_us = max(flops / peak_flops[dtype], bytes / peak_bytes_per_s)`` with the task's compulsory `flops(case)`
and `bytes(case)` and the chip profile's spec peaks; the fraction of the floor a kernel reaches is
``floor_us / time_us`` (1.0 = at the floor). Classes: ``launch-overhead``, ``occupancy`` (fewer programs than
compute units; decided only when the program count of the current kernel is known), ``memory-bound`` and
``compute-bound`` (intensity below / above the chip's ridge point). This module adds the per-case record the
loop logs, ranks patterns with and shows to proposers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from agent.roofline import RooflineUnknown, classify_bottleneck, roofline_point
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec

BOTTLENECKS = ("launch-overhead", "occupancy", "memory-bound", "compute-bound")


@dataclass(frozen=True)
class CaseDiagnosis:
    """Diagnosis of one case for the current best kernel.

    Attributes:
        case_id / case_class: the task case.
        time_us: measured time of the current best kernel (None when nothing was timed).
        floor_us: roofline floor in microseconds (None when the profile lacks both peaks).
        roofline_fraction: floor_us / time_us, 1.0 = at the floor (None when either is unknown).
        intensity_flop_per_byte: compulsory FLOPs / compulsory bytes of the case.
        ridge_flop_per_byte: the chip's peak FLOP/s / peak bytes/s for the case's dtype (None if unknown).
        bound: ``memory-bound`` or ``compute-bound`` (roofline side of the case), ``unknown`` without peaks.
        bottleneck: one of `BOTTLENECKS` (or ``unknown``), the class patterns are ranked for.
        reason: why, in words (from `agent.roofline.classify_bottleneck`).
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
    reason: str = ""
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


def floor_or_none(task: TaskSpec, case: Case, profile: HardwareProfile) -> float | None:
    """Roofline floor of `case` on the chip in microseconds, or None if the profile has neither peak."""
    try:
        return roofline_point(task, case, profile).floor_us
    except RooflineUnknown:
        return None


def diagnose_case(task: TaskSpec, case: Case, profile: HardwareProfile, time_us: float | None,
                  programs: int | None = None) -> CaseDiagnosis:
    """Diagnose one case; `time_us` is the current best kernel's median time (None: not timed)."""
    units = profile.get("num_compute_units")
    units = int(units) if units else None
    try:
        point = roofline_point(task, case, profile)
    except RooflineUnknown as exc:
        intensity = task.flops(case) / max(task.bytes(case), 1.0)
        return CaseDiagnosis(case.id, case.case_class, time_us, None, None, intensity, None, "unknown", "unknown",
                             str(exc), programs, units)
    d = classify_bottleneck(point, time_us, programs, units)
    ridge = point.ridge or None  # 0 when one of the two peaks is unknown
    bound = f"{point.bound}-bound" if ridge else "unknown"
    bottleneck = d.bottleneck
    if ridge is None and bottleneck in ("memory-bound", "compute-bound"):
        bottleneck = "unknown"  # with one peak missing, the roof side is not known
    fraction = point.floor_us / time_us if time_us else None
    return CaseDiagnosis(case.id, case.case_class, time_us, point.floor_us, fraction, point.intensity, ridge, bound,
                         bottleneck, d.reason, programs, units)


def diagnose(task: TaskSpec, cases: list[Case], profile: HardwareProfile, times_us: Mapping[str, float],
             programs: Mapping[str, int | None] | None = None) -> dict[str, CaseDiagnosis]:
    """`diagnose_case` for every case; `times_us` maps case id to time (missing: not timed)."""
    programs = programs or {}
    return {c.id: diagnose_case(task, c, profile, times_us.get(c.id), programs.get(c.id)) for c in cases}
