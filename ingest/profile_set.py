"""Setting one profile field by hand, with its citation: what ``chiplore profile set`` does.

A value the documents do not state (or state wrongly) can be given by the user, never without a source: the
citation (``--source``: a document and where in it; ``--quote``: the phrase) is stored with the value like a
document reading (kind ``stated``, locator ``set by hand``). The value is read with `ingest.units` in the unit it
is written in (``64 KB`` -> 64 KiB, ``2.4 TB/s`` -> 2400 GB/s) or, bare, in the field's unit (`SCALAR_FIELDS`); the
whole text must be that one number (``1e3`` is 1000) and unit, a count a positive whole number (`_parse_value`). A
different value already on record is kept as an alternative and the field becomes a ``conflict`` whose value is
the one set. The user's profile file is written atomically (`hardware_profiles.save_profile`); packaged profiles
are never modified.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInputError
from hardware_profiles import HardwareProfile, known_chips, load_profile, save_profile
from hardware_profiles.merge import _agrees
from hardware_profiles.schema import FEATURE_FIELDS, PEAK_DTYPES, PROFILE_FIELDS, Alternative, ProfileField, Source
from hardware_profiles.yaml_io import check_chip_name
from ingest.units import TARGET_UNITS, Quantity, count_kilo, unit_info

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}
#: A value as `set_field` accepts it: one number (thousands separators, decimals, an exponent) and an optional unit.
_VALUE = re.compile(r"\s*(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<exp>[eE][+-]?\d+)?"
                    r"\s*(?P<unit>[^\s\d.,].*?)?\s*", re.ASCII)


@dataclass(frozen=True)
class SetResult:
    """The profile after the change, the file written and one line saying what changed."""

    profile: HardwareProfile
    path: Path
    message: str


def field_names() -> list[str]:
    """Every field `set_field` accepts: the profile's fields and ``peak_tflops.<dtype>``."""
    return [*PROFILE_FIELDS, *(f"peak_tflops.{d}" for d in PEAK_DTYPES)]


def set_field(chip: str, field: str, value: str, source: str, quote: str | None = None) -> SetResult:
    """Set `field` of `chip`'s profile to `value`, cited by `source` (and `quote`), and save the user's profile.

    Args:
        chip: chip name (its profile is created when there is none).
        field: a profile field (``num_compute_units``) or ``peak_tflops.<dtype>``.
        value: a number, with or without a unit (``48``, ``64 KB``, ``2.4 TB/s``), or true/false for a feature.
        source: where the value comes from: a document and its page or section, a measurement, a vendor contact.
        quote: the phrase of the source that states it, verbatim (optional).

    Raises:
        BadInputError: invalid chip name, unknown field, a value that is not a number of the field's dimension,
            an empty source, or a profile file that cannot be read or written.
    """
    name = check_chip_name(chip)
    if field not in field_names():
        raise BadInputError(f"profile set: {field!r} is not a profile field; known: {', '.join(field_names())}")
    if not source or not source.strip():
        raise BadInputError(f"profile set {name} {field}: --source is required (the document and where it says so)")
    unit = "TFLOP/s" if field.startswith("peak_tflops.") else PROFILE_FIELDS[field]
    number, formula = _parse_value(field, unit, value)
    cited = Source(document=" ".join(source.split()), locator="set by hand (chiplore profile set)",
                   quote=" ".join(quote.split()) if quote else None)
    known = known_chips()
    base = load_profile(name) if name in known else HardwareProfile(chip=name)
    old = _current(base, field, unit)
    new, change = _merged(old, number, unit, cited, formula)
    profile = _with_field(base, field, new)
    path = save_profile(profile)
    created = "" if name in known else (f"new profile {name} (no profile of that name existed; known: "
                                          f"{', '.join(sorted(known)) or 'none'}); ")
    return SetResult(profile, path, f"{created}{name} {field} = {value.strip()} -> {_show(number)} {unit}; {change}")


def _parse_value(field: str, unit: str, text: str) -> tuple[float | bool, str | None]:
    """`text` as the value of `field` in `unit`: true/false for a feature, else one number and nothing else.

    The whole of `text` must be one number (``48``, ``2,039``, ``1.5``, ``1e3`` = 1000) and optionally a unit of
    the field's dimension (`ingest.units.unit_info`: ``64 KB``, ``2.4 TB/s``; the field's own unit name, e.g.
    ``1024 threads``; a ``K`` after a count, `ingest.units.count_kilo`); a bare number is in `unit`. A register
    file given in bytes is read as 32-bit registers (bytes / 4).

    Raises:
        BadInputError: not true/false for a feature; negative; not one number with a known unit; a unit of another
            dimension; not finite (``1e400``, or out of range in `unit`); a count (dimension ``count``:
            compute units, threads, registers) that is not a positive whole number; a size or rate that is 0.
    """
    if field in FEATURE_FIELDS:
        word = text.strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE, None
        raise BadInputError(f"profile set: {field} is a yes/no feature; give true or false, not {text!r}")
    if text.strip().startswith("-"):
        raise BadInputError(f"profile set: {text.strip()!r} is negative; {field} ({unit}) is never below 0")
    target_dimension = TARGET_UNITS[unit][0]
    match = _VALUE.fullmatch(text)
    if match is None:
        raise BadInputError(f"profile set: {text!r} is not a number with a unit for {field} ({unit})")
    number = float(match.group("num").replace(",", "") + (match.group("exp") or ""))
    if not math.isfinite(number):
        raise BadInputError(f"profile set: {text!r} is not a finite number for {field} ({unit})")
    written = match.group("unit")
    if not written or written.lower() == unit.lower():
        info = TARGET_UNITS[unit]
    elif written in ("K", "k") and target_dimension == "count":
        info = ("count", count_kilo(number))
    else:
        info = unit_info(written)
    if info is None:
        raise BadInputError(f"profile set: {text!r} is not a number with a unit for {field} ({unit})")
    quantity = Quantity(value=number * info[1], dimension=info[0], text=text.strip(), start=0, end=len(text),
                        resolution=0.0, unit=written)
    value, formula = quantity.value, None
    if field == "registers_per_compute_unit" and quantity.dimension == "bytes":
        value, formula = quantity.value / 4, f"register file {quantity.text} / 4 bytes per 32-bit register"
    elif quantity.dimension != target_dimension:
        raise BadInputError(f"profile set: {text!r} is {quantity.dimension}, but {field} is in {unit}")
    else:
        value = quantity.to(unit)
    if not math.isfinite(value):
        raise BadInputError(f"profile set: {text!r} is not a finite number for {field} ({unit})")
    if target_dimension == "count" and (value <= 0 or not value.is_integer()):
        raise BadInputError(f"profile set: {text!r} is not a positive whole number; {field} ({unit}) is a count")
    if value <= 0:
        raise BadInputError(f"profile set: {text!r} is not positive; {field} ({unit}) must be above 0")
    return float(value), formula


def _current(profile: HardwareProfile, field: str, unit: str) -> ProfileField:
    if field.startswith("peak_tflops."):
        return profile.peak_tflops.get(field.split(".", 1)[1], ProfileField(unit=unit))
    return getattr(profile, field)


def _merged(old: ProfileField, value: float | bool, unit: str, source: Source,
            formula: str | None) -> tuple[ProfileField, str]:
    kind = "derived" if formula else "stated"
    if old.value is None and old.kind != "conflict":
        return ProfileField(value=value, unit=unit, kind=kind, source=source, formula=formula), "was unknown"
    if old.value is not None and _agrees(old.value, value, unit):
        return (ProfileField(value=value, unit=unit, kind=kind, source=source, formula=formula,
                             alternatives=old.alternatives), f"agrees with {_show(old.value)} on record")
    alternatives = list(old.alternatives)
    if old.value is not None and old.source is not None and not any(
            a.value == old.value and a.source == old.source for a in alternatives):
        alternatives.append(Alternative(value=old.value, source=old.source))
    alternatives.append(Alternative(value=value, source=source))
    field = ProfileField(value=value, unit=unit, kind="conflict", source=source, formula=formula,
                         alternatives=tuple(alternatives))
    return field, f"was {_show(old.value)}: kept as an alternative, the field is now a conflict"


def _with_field(profile: HardwareProfile, field: str, new: ProfileField) -> HardwareProfile:
    if field.startswith("peak_tflops."):
        peaks = dict(profile.peak_tflops)
        peaks[field.split(".", 1)[1]] = new
        return HardwareProfile.model_validate({**profile.model_dump(), "peak_tflops": {
            k: v.model_dump() for k, v in peaks.items()}})
    return HardwareProfile.model_validate({**profile.model_dump(), field: new.model_dump()})


def _show(value: float | bool | None) -> str:
    from hardware_profiles.schema import display_value

    return display_value(value)
