"""A chip profile's kernel limits (`kernels.chip.ChipLimits`), with a one-line error for an unknown one.

The profile is the one source of the limits a kernel runs with (DESIGN.md, "Real components and how they start");
`chip_limits_of` is what chiplore's commands call, so an unknown field surfaces as one `BadInputError` line naming
the field and how to get it (`chiplore profile probe`, a document, `chiplore profile set`), and a value the kernel
cannot run with (a hand-edited ``warp_size: 0``, ``num_compute_units: 0.5``) as one line naming the chip, the
field and the value: a limit must be positive, and a count (compute units, warp width, threads per block) whole.
"""

from __future__ import annotations

import math

from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile, display_value
from kernels.chip import LIMIT_FIELDS, ChipLimits, UnknownChipLimit

#: The limits `ChipLimits` holds as whole numbers (the rest, shared memory per block in KiB, may be fractional).
_COUNTS = ("num_compute_units", "warp_size", "max_threads_per_block")


def chip_limits_of(profile: HardwareProfile) -> ChipLimits:
    """`ChipLimits.from_profile(profile)`: compute units, shared memory per block, warp width, threads per block.

    Raises:
        BadInputError: a limit is unknown in the profile (the message of `kernels.chip.UnknownChipLimit`), or one
            the profile holds is not positive, or a count that is not whole (`_checked`).
    """
    try:
        return _checked(profile)
    except UnknownChipLimit as exc:
        raise BadInputError(str(exc)) from None


def chip_limits_or_none(profile: HardwareProfile | None) -> tuple[ChipLimits | None, str | None]:
    """(limits, None) when every limit is known, else (None, the reason): for callers that can run without
    limits until a kernel needs them (the verifier passes the reason to its sandbox children).

    Raises:
        BadInputError: a limit the profile holds is not positive, or a count that is not whole (`_checked`).
    """
    if profile is None:
        return None, "no chip profile given (pass --chip CHIP: the chip's profile gives the kernel its limits)"
    try:
        return _checked(profile), None
    except UnknownChipLimit as exc:
        return None, str(exc)


def _checked(profile: HardwareProfile) -> ChipLimits:
    """`ChipLimits.from_profile(profile)` after checking each known limit: positive, and whole for a count (which
    `ChipLimits` would otherwise truncate: 0.5 compute units become 0, 72.5 become 72).

    Raises:
        UnknownChipLimit: a limit is unknown in the profile.
        BadInputError: a limit is not positive or a count is not whole, naming the chip, field and value; or
            `ChipLimits` refuses a value (its `ValueError`, with the chip named).
    """
    name = profile.chip or "CHIP"
    for field in LIMIT_FIELDS:
        value = profile.get(field)
        if value is None:
            continue
        number = not isinstance(value, bool) and math.isfinite(value) and value > 0
        if not number or (field in _COUNTS and not float(value).is_integer()):
            kind = "a positive whole number" if field in _COUNTS else "a positive number"
            raise BadInputError(
                f"chip {name!r}: {field} = {display_value(value)} in its profile is not {kind} "
                f"({LIMIT_FIELDS[field]}); correct it with "
                f"`chiplore profile set {name} {field} VALUE --source \"DOCUMENT, page or section\"`")
    try:
        return ChipLimits.from_profile(profile)
    except UnknownChipLimit:
        raise
    except ValueError as exc:
        raise BadInputError(f"chip {name!r}: {exc}") from None
