"""Virtual chips: a profile that is a partition of a real device (DESIGN.md, "Virtual chips").

A virtual chip's profile holds a `Partition`: the host chip (a profile name, e.g. ``h200``), the SMs asked of the
driver for a CUDA green context, and optionally a per-program shared-memory cap. Its facts come from its own
documents and from ``chiplore profile probe`` run inside the partition, never from the host's profile. Everything
timed for the chip runs inside the partition: every process that times (the verifier's sandbox children, the
benchmarks, the probe) calls `enter_chip` before it touches the GPU; `hardware_profiles.green_context` realises it.

A partition larger than its host, a host of another chip, or a host without green contexts (a CUDA driver older
than 12.8, ROCm, a torch built without them) fails with one `VirtualChipError` line.
"""

from __future__ import annotations

from pydantic import ValidationError

from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile, Partition

KIB = 1024


class VirtualChipError(BadInputError):
    """A virtual chip cannot be realised on this machine (one line naming the chip and the reason)."""


def describe_partition(profile: HardwareProfile, host_display: str = "") -> str:
    """One line: ``virtual chip m36: a partition of h200 (NVIDIA H200): 36 SMs of a green context, shared memory
    capped at 48 KiB per program``; '' for a real chip."""
    part = profile.partition
    if part is None:
        return ""
    host = f"{part.host_chip} ({host_display})" if host_display else part.host_chip
    cap = (f", shared memory capped at {part.smem_per_block_cap_kb:g} KiB per program"
           if part.smem_per_block_cap_kb else ", shared memory as the host's")
    return f"virtual chip {profile.chip}: a partition of {host}: {part.compute_units} SMs of a green context{cap}"


def make_partition(chip: str, host: HardwareProfile, compute_units: int, smem_cap_kb: float | None) -> Partition:
    """The `Partition` of virtual chip `chip` on `host` (checked against the host's profile).

    Raises:
        VirtualChipError: more SMs than the host's profile has, or a cap above the host's shared memory per block.
    """
    if host.is_virtual:
        raise VirtualChipError(f"virtual chip {chip}: host {host.chip} is itself virtual; name a real device")
    host_units = host.get("num_compute_units")
    if host_units is not None and compute_units > host_units:
        raise VirtualChipError(f"virtual chip {chip}: {compute_units} compute units do not fit host {host.chip}, "
                               f"which has {host_units:g}")
    host_smem = host.get("smem_per_block_kb")
    if smem_cap_kb is not None and host_smem is not None and smem_cap_kb > host_smem:
        raise VirtualChipError(f"virtual chip {chip}: a {smem_cap_kb:g} KiB shared-memory cap exceeds host "
                               f"{host.chip}'s {host_smem:g} KiB per block")
    try:
        return Partition(host_chip=host.chip, compute_units=compute_units, smem_per_block_cap_kb=smem_cap_kb)
    except ValidationError as exc:
        raise VirtualChipError(f"virtual chip {chip}: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}"
                               ) from None


def host_problem(profile: HardwareProfile, device_index: int = 0) -> str | None:
    """Why `profile`'s partition cannot be realised on device `device_index` of this machine, or None."""
    from hardware_profiles.device_query import chip_name_from_device
    from hardware_profiles.green_context import green_context_problem, host_sm_count

    part = profile.partition
    if part is None:
        return None
    problem = green_context_problem(device_index)
    if problem:
        return problem
    import torch

    name = torch.cuda.get_device_name(device_index)
    if chip_name_from_device(name) != part.host_chip:
        return f"it is a partition of {part.host_chip}, but device {device_index} is {name!r}"
    host = host_sm_count(device_index)
    if part.compute_units > host:
        return f"{part.compute_units} SMs do not fit device {device_index} ({name}), which has {host}"
    return None


def check_host(profile: HardwareProfile, device_index: int = 0) -> None:
    """Raise `VirtualChipError` (one line) when `profile` is virtual and this machine cannot realise it."""
    problem = host_problem(profile, device_index)
    if problem:
        raise VirtualChipError(f"virtual chip {profile.chip} cannot run here: {problem}")


def partition_request(profile: HardwareProfile | None) -> dict | None:
    """The partition as plain data for another process (`enter_partition`), or None for a real chip."""
    if profile is None or profile.partition is None:
        return None
    return {"chip": profile.chip, **profile.partition.model_dump(mode="json")}


def enter_partition(request: dict | None, device_index: int = 0):
    """Realise a `partition_request` in this process: the green context of its SMs made current and its
    shared-memory cap installed (`hardware_profiles.green_context`). Returns the `EnteredContext`, or None for None.
    Call it before this process allocates device memory or launches a kernel.

    Raises:
        hardware_profiles.green_context.GreenContextUnavailable: the host cannot make the green context.
    """
    if not request:
        return None
    from hardware_profiles.green_context import enter_green_context, install_shared_memory_cap

    entered = enter_green_context(int(request["compute_units"]), device_index)
    cap = request.get("smem_per_block_cap_kb")
    if cap:
        install_shared_memory_cap(int(cap * KIB), f"virtual chip {request['chip']}: at most {cap:g} KiB per program")
    return entered


def enter_chip(profile: HardwareProfile, device_index: int = 0):
    """`check_host` then `enter_partition` for `profile` (None for a real chip).

    Raises:
        VirtualChipError: see `check_host`.
    """
    if profile.partition is None:
        return None
    check_host(profile, device_index)
    return enter_partition(partition_request(profile), device_index)
