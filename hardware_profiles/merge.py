"""Combining two profiles of one chip (an existing one and a newer reading) without losing a sourced value.

Rules per field (`merge_field`):

- the newer reading is null: the existing value stays;
- the existing value is null, or was itself a device query (or a measurement) being re-read: the newer value is
  taken;
- both agree (within 2 %, or within the written precision of either; a capacity in GiB also when one value is the
  other's figure read in GB, 1 GB = 1e9 bytes: "80 GB" and "80 GiB" are one capacity written in two conventions,
  see `ingest.units`): the existing value stays, unless the newer one is a document reading and the existing one
  is not sourced by a document (the citation improves); a measurement that agrees is kept beside the value as its
  cross-check (`ProfileField.measurement`);
- they disagree: ``conflict``, every value listed with its source; the value kept is the measured one when either
  reading is a measurement of the part (``chiplore profile probe``: inside a green context or on a driver that
  misreports, the device query describes another chip), else the newer one when it is a device query (a reading of
  the part itself), otherwise the value with more sources, or the newer one on a tie. A re-measurement replaces
  the earlier measurement's alternative.
"""

from __future__ import annotations

from hardware_profiles.schema import (
    MEASURED_DOCUMENT,
    RATE_TABLES,
    Alternative,
    HardwareProfile,
    ProfileField,
    display_value,
)

AGREE_REL = 0.02
#: Kinds whose reading of the same kind is a re-read of the part: the newer one replaces it.
REREAD_KINDS = ("device_query", "measured")


#: GiB per GB (a decimal capacity figure read in the binary convention is this much larger).
_GIB_PER_GB = 2**30 / 1e9


def _agrees(a: float | bool, b: float | bool, unit: str = "") -> bool:
    """Equal features (bools); numbers within `AGREE_REL` of the larger; for a GiB capacity, also the same figure
    read in GB (within 0.5 %)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if abs(a - b) <= AGREE_REL * max(abs(a), abs(b)):
        return True
    return unit == "GiB" and any(abs(x * _GIB_PER_GB - y) <= 0.005 * y for x, y in ((a, b), (b, a)))


def _alternatives(field: ProfileField) -> list[Alternative]:
    alts = list(field.alternatives)
    if field.value is not None and field.source is not None and not any(
            a.value == field.value and a.source == field.source for a in alts):
        alts.append(Alternative(value=field.value, source=field.source))
    return alts


def _is_measured(field: ProfileField) -> bool:
    """Whether the field's value is the one its measurement gave (kind measured, or a conflict kept at it)."""
    m = field.measurement
    return field.kind == "measured" or (m is not None and field.value is not None and not isinstance(field.value, bool)
                                        and _agrees(field.value, m.value))


def merge_field(name: str, old: ProfileField, new: ProfileField) -> tuple[ProfileField, str | None]:
    """The merged field and a message (None when nothing changed); see the module docstring."""
    if new.value is None and new.kind != "conflict":
        return old, None
    if (old.value is None and old.kind != "conflict") or (old.kind == new.kind and new.kind in REREAD_KINDS):
        return new, f"{name}: {display_value(new.value)} {new.unit} ({new.kind})" if new.value is not None else None
    measurement = new.measurement or old.measurement
    if old.value is not None and new.value is not None and _agrees(old.value, new.value, new.unit or old.unit):
        if new.kind not in REREAD_KINDS and old.kind in REREAD_KINDS:
            return new.model_copy(update={"measurement": measurement}), (
                f"{name}: documented {display_value(new.value)} agrees with the {old.kind.replace('_', ' ')} "
                "reading; document cited")
        if new.kind == "measured":
            return old.model_copy(update={"measurement": new.measurement}), (
                f"{name}: measured {display_value(new.value)} agrees with {display_value(old.value)} ({old.kind}); "
                "kept, measurement recorded")
        return old, f"{name}: {display_value(new.value)} ({new.kind}) agrees with {display_value(old.value)}; kept"
    old_alts = _alternatives(old)
    if new.kind == "measured":  # the new measurement supersedes an earlier one
        old_alts = [a for a in old_alts if a.source.document != MEASURED_DOCUMENT]
    alternatives: list[Alternative] = []
    for alt in old_alts + _alternatives(new):
        if not any(a.value == alt.value and a.source == alt.source for a in alternatives):
            alternatives.append(alt)
    if len({a.value for a in alternatives}) < 2:  # a re-measurement that now agrees with every other source
        other = next((a for a in old_alts if a.source.document != MEASURED_DOCUMENT), None)
        if other is None or new.kind != "measured":
            return new, None
        kind = "device_query" if other.source.document == "device-query" else "stated"
        agreed = ProfileField(value=other.value, unit=new.unit or old.unit, kind=kind, source=other.source,
                              measurement=new.measurement)
        return agreed, f"{name}: measured {display_value(new.value)} now agrees; kept"
    support: dict[float, int] = {}
    for alt in alternatives:
        support[alt.value] = support.get(alt.value, 0) + 1
    if new.value is None or new.kind == "measured" or (new.kind == "device_query" and not _is_measured(old)):
        value, source = new.value, new.source
    elif _is_measured(old):
        value, source = old.value, old.source
    else:
        value = max(support, key=lambda v: (support[v], v == new.value))
        source = next((a.source for a in alternatives if a.value == value), new.source)
    merged = ProfileField(value=value, unit=new.unit or old.unit, kind="conflict", source=source,
                          alternatives=tuple(alternatives), measurement=measurement)
    return merged, (f"{name}: CONFLICT {display_value(old.value)} vs {display_value(new.value)}; both recorded, "
                    f"{display_value(value)} kept")


def merge_profiles(base: HardwareProfile, update: HardwareProfile) -> tuple[HardwareProfile, list[str]]:
    """`base` with every field of `update` merged in (`merge_field`), and one message per field touched."""
    changes: dict = {}
    messages: list[str] = []
    for name, new in update.fields().items():
        table = name.split(".", 1)[0]
        if table in RATE_TABLES:
            dtype = name.split(".", 1)[1]
            old = getattr(base, table).get(dtype, ProfileField(unit=new.unit))
            merged, message = merge_field(name, old, new)
            if merged is not old:
                changes.setdefault(table, dict(getattr(base, table)))[dtype] = merged
        else:
            old = getattr(base, name)
            merged, message = merge_field(name, old, new)
            if merged is not old:
                changes[name] = merged
        if message:
            messages.append(message)
    if update.compute_unit_name and not base.compute_unit_name:
        changes.update(compute_unit_name=update.compute_unit_name,
                       compute_unit_name_source=update.compute_unit_name_source)
    for attr in ("display_name", "vendor"):
        if getattr(update, attr) and not getattr(base, attr):
            changes[attr] = getattr(update, attr)
    if base.backend == "unknown" and update.backend != "unknown":
        changes["backend"] = update.backend
    if update.partition is not None and base.partition is None:
        changes["partition"] = update.partition
    merged_profile = HardwareProfile.model_validate({**base.model_dump(), **{
        k: (v.model_dump() if hasattr(v, "model_dump") else
            {d: f.model_dump() for d, f in v.items()} if k in RATE_TABLES else v) for k, v in changes.items()}})
    return merged_profile, messages
