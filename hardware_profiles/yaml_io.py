"""Strict YAML reading and atomic writing of hardware profiles.

A profile file is the `HardwareProfile` model written as YAML: top-level keys are the model's fields, each scalar
field a mapping ``{value, unit, kind, source: {document, locator, quote}, formula, alternatives}``. The loader is
strict: an unknown key (a typo), a duplicate key, a negative number, a unit that is not the field's unit, a value
without a source or kind, a derived value without its formula, or a conflict without the competing values fails
with one line naming the file and the key.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from core.atomic_io import atomic_write_text
from core.errors import BadInputError
from core.settings import chiplore_home
from hardware_profiles.schema import (
    MEASURED_FIELDS,
    PEAK_DTYPES,
    PROFILE_FIELDS,
    RATE_TABLES,
    Alternative,
    HardwareProfile,
    Measurement,
    Partition,
    ProfileField,
    Source,
    field_unit,
)

#: Folder of the profiles shipped with chiplore.
PACKAGED_DIR = Path(__file__).resolve().parent
_CHIP_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def check_chip_name(chip: str) -> str:
    """Lower-cased `chip` if it is a valid profile name (letters, digits, ``._-``; no path separators).

    Raises:
        BadInputError: the name is empty, too long or contains other characters.
    """
    name = str(chip).strip().lower()
    if not _CHIP_NAME.match(name):
        raise BadInputError(f"chip name {chip!r} is not valid: use letters, digits, '-', '_' or '.' (max 64)")
    return name


def user_profiles_dir(create: bool = False) -> Path:
    """``$CHIPLORE_HOME/profiles`` (user profiles, read before the packaged ones); created if `create`."""
    path = chiplore_home() / "profiles"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_profile_file(path: str | Path) -> HardwareProfile:
    """Read and strictly validate one profile YAML file.

    Raises:
        BadInputError: unreadable or non-UTF-8 file, invalid YAML, unknown or duplicate key, negative value,
            wrong unit, a value without source/kind, a derived value without formula, a conflict without alternatives,
            or a ``chip:`` that differs from the file name. The message names the file and the key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read profile: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not a profile YAML file: byte {exc.start} is not UTF-8 text "
                            "(binary or corrupt; fix or delete the file)") from exc
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - strict SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise BadInputError(f"{path}: not a valid profile YAML{where}: {problem}") from exc
    if not isinstance(data, dict):
        raise BadInputError(f"{path}: a profile must be a YAML mapping of fields, got {type(data).__name__}")
    try:
        profile = HardwareProfile.model_validate(data)
    except ValidationError as exc:
        raise BadInputError(f"{path}: {_describe_validation_error(exc)}") from exc
    problems = provenance_problems(profile)
    if profile.chip != path.stem.lower():
        problems.insert(0, f"key 'chip': {profile.chip!r} does not match the file name {path.name!r}")
    if problems:
        raise BadInputError(f"{path}: {problems[0]}")
    return profile


def _describe_validation_error(exc: ValidationError) -> str:
    """First pydantic error as ``key 'a.b': problem`` (with a 'did you mean' for unknown keys)."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    dotted = ".".join(str(part) for part in loc) or "(top level)"
    if err.get("type") == "extra_forbidden":
        allowed = _allowed_keys(loc)
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else f" (allowed: {', '.join(sorted(allowed))})"
        return f"key '{dotted}': unknown key{suggestion}"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    return f"key '{dotted}': {msg}"


def _allowed_keys(loc: tuple) -> list[str]:
    """Keys allowed at the mapping that holds ``loc[-1]``."""
    if len(loc) <= 1:
        return list(HardwareProfile.model_fields)
    parent = loc[-2]
    if parent == "source":
        return list(Source.model_fields)
    if parent == "measurement":
        return list(Measurement.model_fields)
    if parent == "partition":
        return list(Partition.model_fields)
    if isinstance(parent, int):
        return list(Alternative.model_fields)
    if parent in RATE_TABLES:
        return list(PEAK_DTYPES)
    return list(ProfileField.model_fields)


def provenance_problems(profile: HardwareProfile) -> list[str]:
    """Every provenance rule the profile breaks, as ``key 'name': problem`` strings (empty list = clean).

    Rules: the unit is the field's unit; a value has a source and a kind; ``derived`` has a formula;
    ``conflict`` lists at least two alternatives with different values; ``measured`` has its measurement.
    """
    problems = []
    for name, field in profile.fields().items():
        expected = field_unit(name)
        if field.unit and field.unit != expected:
            problems.append(f"key '{name}.unit': {field.unit!r} is not this field's unit {expected!r}")
        if field.value is None and field.kind != "conflict":
            continue
        if field.kind is None:
            problems.append(f"key '{name}.kind': a value needs a kind (stated | derived | conflict | device_query "
                            "| measured)")
        elif field.source is None and field.kind != "conflict":
            problems.append(f"key '{name}.source': a value needs its source (document, locator, quote)")
        elif field.kind == "derived" and not field.formula:
            problems.append(f"key '{name}.formula': a derived value needs the formula it was computed with")
        elif field.kind == "conflict" and len({a.value for a in field.alternatives}) < 2:
            problems.append(f"key '{name}.alternatives': a conflict lists at least two different values")
        elif field.kind == "measured" and field.measurement is None:
            problems.append(f"key '{name}.measurement': a measured value needs its measurement (method, repeats, "
                            "spread)")
    return problems


def profile_to_data(profile: HardwareProfile) -> dict[str, Any]:
    """Plain dict for YAML/JSON output: every scalar and feature field (nulls too), empty parts left out."""
    data: dict[str, Any] = profile.model_dump(mode="json", include={"chip", "display_name", "vendor", "backend"})
    data["compute_unit_name"] = profile.compute_unit_name
    if profile.compute_unit_name_source is not None:
        data["compute_unit_name_source"] = profile.compute_unit_name_source.model_dump(mode="json", exclude_none=True)
    for name in PROFILE_FIELDS:
        data[name] = _field_to_data(getattr(profile, name))
    data["peak_tflops"] = {k: _field_to_data(v) for k, v in profile.peak_tflops.items()}
    for name in MEASURED_FIELDS:  # only a probe fills these: written once measured
        if getattr(profile, name).value is not None or getattr(profile, name).kind is not None:
            data[name] = _field_to_data(getattr(profile, name))
    if profile.achievable_tflops:
        data["achievable_tflops"] = {k: _field_to_data(v) for k, v in profile.achievable_tflops.items()}
    if profile.partition is not None:
        data["partition"] = profile.partition.model_dump(mode="json", exclude_none=True)
    if profile.notes:
        data["notes"] = profile.notes
    return data


def _field_to_data(field: ProfileField) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _plain_number(field.value), "unit": field.unit}
    if field.kind is not None:
        out["kind"] = field.kind
    if field.formula:
        out["formula"] = field.formula
    if field.source is not None:
        out["source"] = field.source.model_dump(mode="json", exclude_none=True)
    if field.alternatives:
        out["alternatives"] = [
            {"value": _plain_number(a.value), "source": a.source.model_dump(mode="json", exclude_none=True)}
            for a in field.alternatives
        ]
    if field.measurement is not None:
        out["measurement"] = field.measurement.model_dump(mode="json")
    return out


def _plain_number(value: float | bool | None) -> float | int | bool | None:
    """Integral floats as ints so YAML reads ``132``, not ``132.0``; bools (features) stay ``true``/``false``."""
    if value is not None and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    return value


def dump_profile_yaml(profile: HardwareProfile) -> str:
    """The profile as YAML text (the format `load_profile_file` reads)."""
    return yaml.safe_dump(profile_to_data(profile), sort_keys=False, allow_unicode=True, width=120)


def save_profile(profile: HardwareProfile, path: str | Path | None = None) -> Path:
    """Write `profile` atomically (temp file, fsync, rename) and return the path written.

    Args:
        profile: the profile to write; it must satisfy the same provenance rules the loader enforces.
        path: target file; default ``$CHIPLORE_HOME/profiles/<chip>.yaml``.

    Raises:
        BadInputError: the profile breaks a provenance rule, or the file cannot be written.
    """
    problems = provenance_problems(profile)
    if problems:
        raise BadInputError(f"profile {profile.chip!r} not saved: {problems[0]}")
    target = Path(path) if path is not None else user_profiles_dir(create=True) / f"{profile.chip}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    text = dump_profile_yaml(profile)
    try:
        atomic_write_text(target, text)
    except OSError as exc:
        raise BadInputError(f"{target}: cannot write profile: {exc.strerror or exc}") from exc
    return target


