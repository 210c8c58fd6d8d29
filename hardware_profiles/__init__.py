"""Hardware profiles: typed, sourced chip facts (see `hardware_profiles.schema`).

Public API (docs/ARCHITECTURE.md):

- `load_profile(chip) -> HardwareProfile`: the user's profile ``$CHIPLORE_HOME/profiles/<chip>.yaml`` if present,
  else the packaged ``hardware_profiles/<chip>.yaml``.
- `known_chips() -> list[str]`: every chip with a user or packaged profile.
- `save_profile(profile, path=None) -> Path`: atomic YAML write (default: the user's profile folder).
- `load_profile_file(path) -> HardwareProfile`: the strict loader behind `load_profile`.

Packaged profiles: h100, h200, a100, mi300x (public datasheet and documentation facts, every value quoted)
and m890 (only what is public: 36 compute units and the 48 KB per-block shared-memory budget).
"""

from __future__ import annotations

from pathlib import Path

from core.errors import BadInputError
from hardware_profiles.schema import (
    FEATURE_FIELDS,
    PEAK_DTYPES,
    PROFILE_FIELDS,
    SCALAR_FIELDS,
    Alternative,
    HardwareProfile,
    ProfileField,
    Source,
    display_value,
)
from hardware_profiles.yaml_io import (
    PACKAGED_DIR,
    check_chip_name,
    dump_profile_yaml,
    load_profile_file,
    save_profile,
    user_profiles_dir,
)

__all__ = [
    "FEATURE_FIELDS",
    "PEAK_DTYPES",
    "PROFILE_FIELDS",
    "SCALAR_FIELDS",
    "Alternative",
    "HardwareProfile",
    "ProfileField",
    "Source",
    "display_value",
    "dump_profile_yaml",
    "known_chips",
    "load_profile",
    "load_profile_file",
    "profile_path",
    "save_profile",
    "user_profiles_dir",
]


def profile_path(chip: str) -> Path | None:
    """Path of the profile `load_profile(chip)` would read (user file first), or None if there is none.

    Raises:
        BadInputError: `chip` is not a valid chip name (letters, digits, ``-``, ``_``, ``.``).
    """
    name = check_chip_name(chip)
    for folder in (user_profiles_dir(create=False), PACKAGED_DIR):
        candidate = folder / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    return None


def load_profile(chip: str) -> HardwareProfile:
    """Load the profile of `chip` (case-insensitive): user profile first, then the packaged one.

    Raises:
        BadInputError: unknown chip (the message lists the known ones), or a profile file that fails the strict
            checks of `load_profile_file` (the message names the file and the key).
    """
    path = profile_path(chip)
    if path is None:
        known = ", ".join(known_chips()) or "none"
        name = chip.strip().lower()
        raise BadInputError(
            f"unknown chip {chip!r}: no hardware profile in {user_profiles_dir(create=False)} or the packaged "
            f"profiles (known: {known}); onboard documents that state its facts (`chiplore onboard {name} PATH...`) "
            f"or run `chiplore profile detect --as {name}` on the device"
        )
    return load_profile_file(path)


def known_chips() -> list[str]:
    """Sorted names of all chips with a user or packaged profile."""
    names = {p.stem for p in PACKAGED_DIR.glob("*.yaml")}
    user_dir = user_profiles_dir(create=False)
    if user_dir.is_dir():
        names.update(p.stem for p in user_dir.glob("*.yaml"))
    return sorted(names)
