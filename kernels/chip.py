"""The chip limits a kernel runs with, and how a caller gives them (task-neutral; torch/triton/stdlib only).

A kernel's tiles, warps and split factors are bounded by the chip's compute units, shared memory per block, warp
width and threads per block (`ChipLimits`). The chip's profile is their one source (DESIGN.md, "Real components and
how they start"): chiplore builds them with `ChipLimits.from_profile`, and an unknown field is an
`UnknownChipLimit` naming the field and how to get it, never a number borrowed from another chip.

A kernel gets its limits in one of two explicit ways:

- an argument: ``run_family(config, ..., limits=ChipLimits(...))`` (a rendered candidate passes the limits of the
  chip it was written for, as data in the file);
- the process's chip limits, set by the caller: ``set_chip_limits(limits)`` or ``with chip_limits(limits): ...``.
  The verifier's sandbox children, ``chiplore bench`` and the benchmark scripts set them from the chip's profile;
  code that drops the kernel into another code base (e.g. SGLang) sets them once at start-up, e.g.
  ``set_chip_limits(ChipLimits(num_compute_units=132, smem_per_block_kb=227, warp_size=32,
  max_threads_per_block=1024))``, or from the device it runs on with ``set_chip_limits(ChipLimits.from_device(d))``
  (a choice the caller makes; a kernel never queries the device on its own).

`device_conflicts` cross-checks limits against the device query and names each disagreement: a device reading may
check the profile, never silently replace it (inside a CUDA green context, for example, the device query still
reports the whole GPU's multiprocessors).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: The limit fields, their meaning and unit (the unit is the profile field's).
LIMIT_FIELDS: dict[str, str] = {
    "num_compute_units": "compute units (count)",
    "smem_per_block_kb": "shared memory per block (KiB)",
    "warp_size": "warp width (threads)",
    "max_threads_per_block": "threads per block",
}


class UnknownChipLimit(ValueError):
    """A limit the kernel needs is unknown in the chip's profile. `field` names it, `chip` the profile."""

    def __init__(self, chip: str, field_name: str) -> None:
        self.chip, self.field = chip, field_name
        name = chip or "CHIP"
        super().__init__(
            f"chip {name!r}: {field_name} ({LIMIT_FIELDS[field_name]}) is unknown in its profile, and a kernel runs "
            f"only with limits from the chip's profile; measure it with `chiplore profile probe {name}` on the "
            f"device, onboard a document that states it (`chiplore onboard {name} DOC`), or set it with "
            f"`chiplore profile set {name} {field_name} VALUE --source \"DOCUMENT, page or section\"`")


class ChipLimitsUnset(RuntimeError):
    """A kernel was called with no limits argument and no chip limits set for the process."""


@dataclass(frozen=True)
class ChipLimits:
    """The chip numbers a kernel needs, every one known (see the module docstring for where they come from).

    Attributes:
        num_compute_units: SMs / CUs / tiles that run programs concurrently (count).
        smem_per_block_kb: shared memory one program (block) may use, KiB (1 KiB = 1024 B).
        warp_size: threads that execute in lockstep (32 on NVIDIA, 64 on AMD CDNA).
        max_threads_per_block: threads of one program (num_warps x warp_size may not exceed it).
        chip: the chip's name, for messages only (not part of equality or hashing).

    Raises:
        ValueError: a limit that is not a positive number.
    """

    num_compute_units: int
    smem_per_block_kb: float
    warp_size: int
    max_threads_per_block: int
    chip: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for name in LIMIT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"ChipLimits.{name}={value!r} must be a positive number ({LIMIT_FIELDS[name]})")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the limits and the chip name (JSON-able)."""
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ChipLimits:
        """Inverse of `to_dict`."""
        return ChipLimits(int(data["num_compute_units"]), float(data["smem_per_block_kb"]), int(data["warp_size"]),
                          int(data["max_threads_per_block"]), str(data.get("chip", "")))

    @staticmethod
    def from_profile(profile: Any) -> ChipLimits:
        """From any object with ``get(name)`` and ``chip`` (a `hardware_profiles.HardwareProfile`).

        Raises:
            UnknownChipLimit: a limit field is unknown (None), naming the first such field.
        """
        chip = str(getattr(profile, "chip", "") or "")
        values: dict[str, float] = {}
        for name in LIMIT_FIELDS:
            value = profile.get(name)
            if value is None:
                raise UnknownChipLimit(chip, name)
            values[name] = value
        return ChipLimits(int(values["num_compute_units"]), float(values["smem_per_block_kb"]),
                          int(values["warp_size"]), int(values["max_threads_per_block"]), chip)

    @staticmethod
    def from_device(device: Any) -> ChipLimits:
        """What the device reports about itself (Triton's driver query ``get_device_properties``, the
        cuDeviceGetAttribute readings Triton itself checks kernels against; threads per block 1024, the CUDA and
        HIP limit of every current GPU). Only for a caller that chooses the device as its source: inside a green
        context or on a driver that misreports, this is not the chip the kernel runs on.

        Raises:
            ValueError: `device` is not a GPU (the Triton interpreter has no chip to query).
        """
        import torch
        import triton

        device = torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"ChipLimits.from_device: {device} is not a GPU; give the chip's limits explicitly")
        # Triton's driver query (cuDeviceGetAttribute); torch's may load NVML when CUDA_VISIBLE_DEVICES is set
        props = triton.runtime.driver.active.utils.get_device_properties(device.index or 0)
        return ChipLimits(int(props["multiprocessor_count"]), props["max_shared_mem"] / 1024,
                          int(props.get("warpSize", 32) or 32), 1024, f"device {device}")


_PROCESS_LIMITS: list[ChipLimits | None] = [None]


def set_chip_limits(limits: ChipLimits | None) -> ChipLimits | None:
    """Set (or with None, clear) the process's chip limits; returns the previous ones."""
    if limits is not None and not isinstance(limits, ChipLimits):
        raise TypeError(f"set_chip_limits expects ChipLimits or None, got {type(limits).__name__}")
    previous, _PROCESS_LIMITS[0] = _PROCESS_LIMITS[0], limits
    return previous


class chip_limits:  # noqa: N801 - used like a function: ``with chip_limits(limits): ...``
    """Run a block with `limits` as the process's chip limits (the previous ones restored after)."""

    def __init__(self, limits: ChipLimits) -> None:
        self.limits, self._previous = limits, None

    def __enter__(self) -> ChipLimits:
        self._previous = set_chip_limits(self.limits)
        return self.limits

    def __exit__(self, *exc: object) -> None:
        set_chip_limits(self._previous)


def current_chip_limits() -> ChipLimits:
    """The process's chip limits.

    Raises:
        ChipLimitsUnset: none were set (the message says how to set them).
    """
    limits = _PROCESS_LIMITS[0]
    if limits is None:
        raise ChipLimitsUnset(
            "no chip limits set: a kernel's tiles and split factors come from the chip's limits, never from defaults; "
            "pass limits=ChipLimits(...) or call kernels.chip.set_chip_limits(ChipLimits(...)) first (chiplore sets "
            "them from the chip's profile: `chiplore verify TASK FILE --chip CHIP`, `chiplore bench TASK --chip CHIP`)")
    return limits


def chip_limits_if_set() -> ChipLimits | None:
    """The process's chip limits, or None when none are set."""
    return _PROCESS_LIMITS[0]


def limits_or_current(limits: ChipLimits | None) -> ChipLimits:
    """`limits` when given, else `current_chip_limits()` (same `ChipLimitsUnset`)."""
    return limits if limits is not None else current_chip_limits()


def device_conflicts(limits: ChipLimits, reported: ChipLimits, rel: float = 0.02) -> list[str]:
    """The limits on which `reported` (e.g. `ChipLimits.from_device`) disagrees with `limits` by more than `rel`,
    as ``"field: profile X, device Y"`` lines (empty when they agree). Pure; the caller decides what to do."""
    out = []
    for name in LIMIT_FIELDS:
        mine, theirs = float(getattr(limits, name)), float(getattr(reported, name))
        if abs(mine - theirs) > rel * max(mine, theirs):
            out.append(f"{name}: profile {mine:g}, device {theirs:g}")
    return out
