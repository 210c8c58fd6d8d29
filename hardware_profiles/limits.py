"""A chip profile's kernel limits (`kernels.chip.ChipLimits`), with a one-line error for an unknown one.

The profile is the one source of the limits a kernel runs with (DESIGN.md, "Real components and how they start");
`chip_limits_of` is what chiplore's commands call, so an unknown field surfaces as one `BadInputError` line naming
the field and how to get it (`chiplore profile probe`, a document, `chiplore profile set`).
"""

from __future__ import annotations

from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile
from kernels.chip import ChipLimits, UnknownChipLimit


def chip_limits_of(profile: HardwareProfile) -> ChipLimits:
    """`ChipLimits.from_profile(profile)`: compute units, shared memory per block, warp width, threads per block.

    Raises:
        BadInputError: a limit is unknown in the profile (the message of `kernels.chip.UnknownChipLimit`).
    """
    try:
        return ChipLimits.from_profile(profile)
    except UnknownChipLimit as exc:
        raise BadInputError(str(exc)) from None


def chip_limits_or_none(profile: HardwareProfile | None) -> tuple[ChipLimits | None, str | None]:
    """(limits, None) when every limit is known, else (None, the reason): for callers that can run without
    limits until a kernel needs them (the verifier passes the reason to its sandbox children)."""
    if profile is None:
        return None, "no chip profile given (pass --chip CHIP: the chip's profile gives the kernel its limits)"
    try:
        return ChipLimits.from_profile(profile), None
    except UnknownChipLimit as exc:
        return None, str(exc)
