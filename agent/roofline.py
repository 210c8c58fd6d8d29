"""Roofline floor and bottleneck classification from a chip profile.

Roofline model (Williams, Waterman, Patterson, "Roofline: an insightful visual performance model for multicore
architectures", CACM 52(4), 2009): a kernel that must execute F FLOPs and move B bytes of device memory cannot
finish faster than ``max(F / peak_flops, B / peak_bandwidth)``. The task spec supplies F and B (compulsory
traffic) per case; the chip profile supplies the peaks. The floor uses spec peaks, so no honest timing can be
below it: the verifier rejects such a time as ``too_fast_to_be_true``. The measured floor (`measured_roofline_point`)
uses what ``chiplore profile probe`` measured instead (achievable copy bandwidth and dense dot throughput): the
time a kernel as good as those probes would take, shown beside the spec floor and never used as a gate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from core.errors import ChiploreError
from hardware_profiles.peaks import PEAK_KEYS, dtype_peak_flops
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec

#: Launch latency of one kernel, microseconds: "a few microseconds" per launch (NVIDIA CUDA C++ Best Practices
#: Guide, "Kernel launch overhead"); used only to name a launch-bound case, never as a floor.
LAUNCH_OVERHEAD_US = 5.0

Bottleneck = Literal["memory-bound", "compute-bound", "occupancy", "launch-overhead"]


class RooflineUnknown(ChiploreError):
    """The profile has neither a FLOP/s peak for the dtype nor a memory bandwidth."""


@dataclass(frozen=True)
class RooflinePoint:
    """A case placed on a chip's roofline. Times in microseconds, intensity in FLOP/byte."""

    flops: float
    bytes: float
    intensity: float
    ridge: float
    compute_floor_us: float
    memory_floor_us: float

    @property
    def floor_us(self) -> float:
        """max(compute floor, memory floor)."""
        return max(self.compute_floor_us, self.memory_floor_us)

    @property
    def bound(self) -> Literal["memory", "compute"]:
        """Which roof the floor sits under."""
        return "memory" if self.memory_floor_us >= self.compute_floor_us else "compute"


def _dtype_name(task: TaskSpec, case: Case, dtype: str | None) -> str:
    name = str(dtype or task.dtype_of(case)).replace("torch.", "")
    if name not in PEAK_KEYS:
        raise ValueError(f"dtype {name!r} has no peak mapping; expected one of {sorted(PEAK_KEYS)}")
    return name


def roofline_point(task: TaskSpec, case: Case, profile: HardwareProfile, dtype: str | None = None) -> RooflinePoint:
    """FLOPs and compulsory bytes of `case` (in `dtype`, default the case's) against `profile`'s peaks.

    Raises:
        RooflineUnknown: the profile knows neither peak (an unknown peak contributes a floor of 0).
        ValueError: unsupported dtype.
    """
    name = _dtype_name(task, case, dtype)
    if not dtype_peak_flops(profile, name) and not profile.peak_bytes_per_s():
        raise RooflineUnknown(f"profile {profile.chip!r} has no {name} FLOP/s peak and no memory bandwidth")
    return _point(task, case, dtype, lambda n: (dtype_peak_flops(profile, n), profile.peak_bytes_per_s()))


def _point(task: TaskSpec, case: Case, dtype: str | None, rates) -> RooflinePoint:
    name = _dtype_name(task, case, dtype)
    sized = case if case.params.get("dtype") == name else replace(case, params={**dict(case.params), "dtype": name})
    flops, nbytes = float(task.flops(sized)), float(task.bytes(sized))
    pf, bw = rates(name)
    compute_us = flops / pf * 1e6 if pf else 0.0
    memory_us = nbytes / bw * 1e6 if bw else 0.0
    ridge = pf / bw if pf and bw else 0.0  # spec rates: = hardware_profiles.peaks.ridge_flop_per_byte
    return RooflinePoint(flops, nbytes, flops / nbytes if nbytes else 0.0, ridge, compute_us, memory_us)


def measured_roofline_point(task: TaskSpec, case: Case, profile: HardwareProfile, dtype: str | None = None
                            ) -> RooflinePoint:
    """Like `roofline_point`, with the probe's achievable rates (`HardwareProfile.achievable_flops`,
    `achievable_bytes_per_s`) in place of the spec peaks; float32 takes the larger of tf32/fp32 as measured.

    Raises:
        RooflineUnknown: nothing was measured (neither rate). ValueError: unsupported dtype.
    """
    def rates(name: str) -> tuple[float | None, float | None]:
        known = [v for v in (profile.achievable_flops(k) for k in PEAK_KEYS[name]) if v]
        return (max(known) if known else None), profile.achievable_bytes_per_s()

    name = _dtype_name(task, case, dtype)
    pf, bw = rates(name)
    if not pf and not bw:
        raise RooflineUnknown(f"profile {profile.chip!r} has no measured {name} dot throughput and no measured "
                              f"bandwidth (run `chiplore profile probe {profile.chip}`)")
    return _point(task, case, dtype, rates)


def measured_floor_or_none(task: TaskSpec, case: Case, profile: HardwareProfile) -> float | None:
    """The measured floor of `case` in microseconds, or None when the probe has not measured the chip."""
    try:
        return measured_roofline_point(task, case, profile).floor_us
    except RooflineUnknown:
        return None


def roofline_floor_us(task: TaskSpec, case: Case, profile: HardwareProfile, dtype: str | None = None) -> float:
    """Fastest physically possible time of `case` on the chip, microseconds: max(FLOPs/peak, bytes/bandwidth).

    Raises:
        RooflineUnknown: the profile has neither peak.
    """
    return roofline_point(task, case, profile, dtype).floor_us


def fraction_of_floor(floor_us: float, time_us: float) -> float:
    """floor / time: 1.0 is at the roofline, 0.1 is ten times slower than the floor; 0 when time_us <= 0."""
    return floor_us / time_us if time_us > 0 else 0.0


@dataclass(frozen=True)
class Diagnosis:
    """Bottleneck class of one case with the reason in words."""

    bottleneck: Bottleneck
    reason: str
    fraction_of_floor: float


def classify_bottleneck(
    point: RooflinePoint,
    time_us: float | None = None,
    programs: int | None = None,
    compute_units: int | None = None,
    launch_overhead_us: float = LAUNCH_OVERHEAD_US,
) -> Diagnosis:
    """Name what limits a case: launch overhead, too few programs (occupancy), or the memory/compute roof.

    Rules, in order: a measured time within 4x the launch overhead while the floor is under a quarter of it ->
    ``launch-overhead``; fewer programs than compute units -> ``occupancy`` (part of the chip idles);
    otherwise the roof the floor sits under (intensity below the ridge point -> ``memory-bound``).
    """
    fraction = fraction_of_floor(point.floor_us, time_us) if time_us else 0.0
    if time_us and time_us <= 4 * launch_overhead_us and point.floor_us < 0.25 * time_us:
        return Diagnosis("launch-overhead", f"{time_us:.1f} us is within 4x a {launch_overhead_us:g} us launch "
                         f"while the floor is {point.floor_us:.2f} us", fraction)
    if programs is not None and compute_units and programs < compute_units:
        return Diagnosis("occupancy", f"{programs} programs for {compute_units} compute units", fraction)
    if point.bound == "memory":
        return Diagnosis("memory-bound", f"intensity {point.intensity:.1f} FLOP/B below the ridge "
                         f"{point.ridge:.1f} FLOP/B", fraction)
    return Diagnosis("compute-bound", f"intensity {point.intensity:.1f} FLOP/B above the ridge "
                     f"{point.ridge:.1f} FLOP/B", fraction)
