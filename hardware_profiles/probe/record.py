"""The probe's readings as profile fields of kind ``measured``, merged into the chip's profile without replacing a
documented value (a disagreement is a ``conflict``, `hardware_profiles.merge`), and the spec and measured
rooflines side by side.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hardware_profiles.device_query import DeviceReport, merge_device_facts
from hardware_profiles.merge import merge_profiles
from hardware_profiles.probe.measure import ProbeReport
from hardware_profiles.schema import (
    MEASURED_DOCUMENT,
    RATE_TABLES,
    HardwareProfile,
    Measurement,
    ProfileField,
    Source,
    field_unit,
)


def measured_fields(report: ProbeReport, device: str) -> dict[str, ProfileField]:
    """One ``measured`` `ProfileField` per reading, keyed as `HardwareProfile.fields` names them; `device` says
    where it ran (the device name, and the partition for a virtual chip)."""
    out = {}
    for name, reading in report.readings.items():
        measurement = Measurement(value=reading.value, method=reading.method, repeats=reading.repeats,
                                  spread=round(reading.spread, 4), device=device)
        source = Source(document=MEASURED_DOCUMENT, locator=f"on {device} (triton {report.triton_version})",
                        quote=reading.method[:200])
        out[name] = ProfileField(value=reading.value, unit=field_unit(name), kind="measured", source=source,
                                 measurement=measurement)
    return out


def probe_update(chip: str, fields: dict[str, ProfileField]) -> HardwareProfile:
    """A profile of `chip` holding only `fields` (the update `merge_profiles` folds in)."""
    plain = {k: v for k, v in fields.items() if "." not in k}
    tables: dict[str, dict[str, ProfileField]] = {t: {} for t in RATE_TABLES}
    for key, value in fields.items():
        if "." in key:
            table, dtype = key.split(".", 1)
            tables[table][dtype] = value
    return HardwareProfile(chip=chip, **plain, **{t: v for t, v in tables.items() if v})


def apply_probe(profile: HardwareProfile, report: ProbeReport, device: str,
                device_report: DeviceReport | None = None) -> tuple[HardwareProfile, list[str]]:
    """`profile` cross-checked by the device query (when given) and then by the probe's measurements; every
    field touched gives one message (``CONFLICT`` where a reading disagrees with what was there)."""
    messages: list[str] = []
    if device_report is not None:
        profile, msgs = merge_device_facts(profile, device_report)
        messages += [f"device query: {m}" for m in msgs]
    merged, msgs = merge_profiles(profile, probe_update(profile.chip, measured_fields(report, device)))
    messages += [f"probe: {m}" for m in msgs]
    return merged, messages


def roofline_rows(profile: HardwareProfile) -> list[tuple[str, str, str, str]]:
    """(quantity, spec, measured, measured / spec) rows: bandwidth, dense peaks per measured dtype, ridge points."""
    def fmt(v: float | None, unit: str) -> str:
        return "-" if v is None else f"{v:,.1f} {unit}"

    def ratio(a: float | None, b: float | None) -> str:
        return f"{b / a:.0%}" if a and b else "-"

    bw_spec, bw_meas = profile.mem_bw_gbps.value, profile.achievable_mem_bw_gbps.value
    rows = [("memory bandwidth", fmt(bw_spec, "GB/s"), fmt(bw_meas, "GB/s"), ratio(bw_spec, bw_meas))]
    for dtype in sorted(set(profile.achievable_tflops) | set(profile.peak_tflops)):
        spec, meas = profile.peak_flops(dtype), profile.achievable_flops(dtype)
        rows.append((f"dense {dtype}", fmt(spec and spec / 1e12, "TFLOP/s"), fmt(meas and meas / 1e12, "TFLOP/s"),
                     ratio(spec, meas)))
        ridge_spec = spec / (bw_spec * 1e9) if spec and bw_spec else None
        ridge_meas = meas / (bw_meas * 1e9) if meas and bw_meas else None
        rows.append((f"ridge {dtype} (roofline floor switches roofs)", fmt(ridge_spec, "FLOP/B"),
                     fmt(ridge_meas, "FLOP/B"), ratio(ridge_spec, ridge_meas)))
    return rows


def report_to_json(report: ProbeReport) -> dict[str, Any]:
    """The report as plain data (readings with their details, comparisons, notes)."""
    return {"device": report.device, "backend": report.backend, "triton": report.triton_version,
            "readings": {k: asdict(v) for k, v in report.readings.items()}, "comparisons": report.comparisons,
            "notes": report.notes}
