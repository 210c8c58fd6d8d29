"""Device query through torch (CUDA or ROCm): the facts a present chip reports about itself, each with its API.

`query_device(index)` reads ``torch.cuda.get_device_properties(index)`` and, for what that object lacks in the
installed torch, the CUDA driver's ``cuDeviceGetAttribute`` (libcuda, through ctypes) or Triton's driver utilities
(``triton.runtime.driver.active.utils.get_device_properties``). Every `DeviceFact` names the API and attribute
that gave it, e.g. the opt-in shared memory per block comes from ``shared_memory_per_block_optin`` on torch builds
that have it, else ``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``, else Triton's ``max_shared_mem``, and
on ROCm (where torch exposes no opt-in limit) ``shared_memory_per_block``. On CUDA the feature
``tensor_memory_accelerator`` is derived from the compute capability (``major``/``minor`` of the same properties):
true from 9.0 on, false below (NVIDIA CCCL documentation, "Tensor Memory Accelerator (TMA)": "a hardware feature
available on Hopper (SM90) and newer GPUs"); it is not read on ROCm, where it stays as the documents say.

`merge_device_facts(profile, ...)` folds the facts into a profile: a field the documents did not state is filled
(kind ``device_query``); a field that agrees with its documented value (within 2 %, e.g. 140.4 GiB usable of a
"141 GB" part) keeps the documented value; a field that disagrees becomes a ``conflict`` listing both values with
their sources, the device's value kept (it is a reading of this very part). A documented value is never silently
overwritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import ChiploreError
from hardware_profiles.merge import merge_field
from hardware_profiles.schema import PROFILE_FIELDS, HardwareProfile, ProfileField, Source


class NoDeviceError(ChiploreError):
    """No CUDA or ROCm device is visible to torch."""


@dataclass(frozen=True)
class DeviceFact:
    """One value read from the device: profile field, value in the field's unit (a bool for a feature), API used,
    raw reading."""

    field: str
    value: float | bool
    api: str
    raw: str


@dataclass(frozen=True)
class DeviceReport:
    """What `query_device` read: device name, backend, architecture, torch version and the facts."""

    name: str
    backend: str
    arch: str
    torch_version: str
    facts: tuple[DeviceFact, ...]


def _torch():
    import torch

    return torch


def query_device(index: int = 0) -> DeviceReport:
    """Facts reported by device `index` (see module docstring for the APIs used).

    Raises:
        NoDeviceError: torch sees no CUDA/ROCm device, or `index` is out of range.
    """
    torch = _torch()
    if not torch.cuda.is_available():
        build = "ROCm " + torch.version.hip if torch.version.hip else (
            "CUDA " + torch.version.cuda if torch.version.cuda else "CPU only")
        raise NoDeviceError(f"no CUDA or ROCm device visible to torch {torch.__version__} ({build} build); run "
                            "`chiplore profile detect` on a machine with the chip")
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        raise NoDeviceError(f"device {index} does not exist: torch sees {count} device(s) (0..{count - 1})")
    props = torch.cuda.get_device_properties(index)
    backend = "rocm" if torch.version.hip else "cuda"
    api = f"torch.cuda.get_device_properties({index})"
    facts: list[DeviceFact] = []

    def take(field: str, attr: str, convert=lambda v: float(v), unit_note: str = "") -> bool:
        raw = getattr(props, attr, None)
        if raw is None or (isinstance(raw, (int, float)) and raw <= 0):
            return False
        facts.append(DeviceFact(field, convert(raw), f"{api}.{attr}", f"{attr} = {raw}{unit_note}"))
        return True

    take("num_compute_units", "multi_processor_count")
    take("warp_size", "warp_size")
    if not take("max_threads_per_block", "max_threads_per_block") and backend == "cuda":
        _from_cuda_driver(facts, index, "max_threads_per_block", "MAX_THREADS_PER_BLOCK")
    take("smem_per_compute_unit_kb", "shared_memory_per_multiprocessor", lambda v: v / 1024, " bytes")
    if not take("registers_per_compute_unit", "regs_per_multiprocessor") and backend == "cuda":
        _from_cuda_driver(facts, index, "registers_per_compute_unit", "MAX_REGISTERS_PER_MULTIPROCESSOR")
    take("l2_cache_mb", "L2_cache_size", lambda v: v / 2**20, " bytes")
    take("mem_capacity_gb", "total_memory", lambda v: v / 2**30, " bytes")
    if backend == "cuda":
        found = take("smem_per_block_kb", "shared_memory_per_block_optin", lambda v: v / 1024, " bytes")
        found = found or _from_cuda_driver(facts, index, "smem_per_block_kb",
                                           "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", lambda v: v / 1024, " bytes")
        found = found or _from_triton(facts, index, "smem_per_block_kb", "max_shared_mem", lambda v: v / 1024,
                                      " bytes")
        if not found:
            take("smem_per_block_kb", "shared_memory_per_block", lambda v: v / 1024, " bytes (not opt-in)")
    else:
        take("smem_per_block_kb", "shared_memory_per_block", lambda v: v / 1024, " bytes")
    if not take("clock_mhz", "clock_rate", lambda v: v / 1000, " kHz"):
        _from_triton(facts, index, "clock_mhz", "sm_clock_rate", lambda v: v / 1000, " kHz")
    if backend == "cuda":
        facts.append(tma_fact(props.major, props.minor, f"{api}.major/.minor"))
    arch = getattr(props, "gcnArchName", "") or f"sm_{props.major}{props.minor}"
    return DeviceReport(name=props.name, backend=backend, arch=arch, torch_version=torch.__version__,
                        facts=tuple(facts))


#: CUdevice_attribute values of the CUDA driver API (cuda.h), for what torch's properties lack.
_CU_ATTRIBUTES = {"MAX_THREADS_PER_BLOCK": 1, "MAX_REGISTERS_PER_MULTIPROCESSOR": 82,
                  "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97}


def _from_cuda_driver(facts: list[DeviceFact], index: int, field: str, attribute: str,
                      convert=lambda v: float(v), unit_note: str = "") -> bool:
    """A fact from ``cuDeviceGetAttribute`` of the CUDA driver library (libcuda), which every CUDA machine has."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        value, device = ctypes.c_int(0), ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(device), index) != 0:
            return False
        if lib.cuDeviceGetAttribute(ctypes.byref(value), _CU_ATTRIBUTES[attribute], device) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if value.value <= 0:
        return False
    facts.append(DeviceFact(field, convert(value.value), f"libcuda cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_"
                                                         f"{attribute}, device {index})",
                            f"CU_DEVICE_ATTRIBUTE_{attribute} = {value.value}{unit_note}"))
    return True


def _from_triton(facts: list[DeviceFact], index: int, field: str, key: str, convert, unit_note: str) -> bool:
    """A fact from Triton's driver utilities, when torch's properties lack it."""
    try:
        from triton.runtime import driver

        values = driver.active.utils.get_device_properties(index)
    except Exception:  # noqa: BLE001 - any failure means "not available from Triton"
        return False
    raw = values.get(key) if isinstance(values, dict) else None
    if not raw:
        return False
    facts.append(DeviceFact(field, convert(raw), f"triton.runtime.driver.active.utils.get_device_properties"
                                                 f"({index})['{key}']", f"{key} = {raw}{unit_note}"))
    return True


#: First CUDA compute capability with the Tensor Memory Accelerator (Hopper); source in the module docstring.
TMA_MIN_CAPABILITY = (9, 0)


def tma_fact(major: int, minor: int, api: str) -> DeviceFact:
    """``tensor_memory_accelerator`` of a CUDA device of compute capability `major`.`minor`: true from
    `TMA_MIN_CAPABILITY` on (9.0 Hopper, 10.x/12.x Blackwell), false before (8.x Ampere/Ada: cp.async only)."""
    has = (int(major), int(minor)) >= TMA_MIN_CAPABILITY
    return DeviceFact("tensor_memory_accelerator", has, api,
                      f"compute capability {major}.{minor} ({'>=' if has else '<'} 9.0, the first with TMA)")


def chip_name_from_device(name: str) -> str:
    """Profile name for a device name: ``"NVIDIA H200"`` -> ``"h200"``, ``"AMD Instinct MI300X"`` -> ``"mi300x"``
    (the first token with letters and digits; else the whole name in lower case with ``_``)."""
    tokens = [t.lower() for t in re.findall(r"[A-Za-z0-9]+", name)]
    model = next((t for t in tokens if re.search(r"\d", t) and re.search(r"[a-z]", t)), None)
    return model or "_".join(tokens) or "device"


def merge_device_facts(profile: HardwareProfile, report: DeviceReport) -> tuple[HardwareProfile, list[str]]:
    """`profile` with the device's facts folded in (`hardware_profiles.merge.merge_field`: fill unknowns, keep
    agreeing documented values, record disagreements as conflicts with the device value kept) and one message per
    field touched."""
    updates: dict[str, ProfileField] = {}
    messages: list[str] = []
    for fact in report.facts:
        if fact.field not in PROFILE_FIELDS:
            continue
        source = Source(document="device-query", locator=f"{fact.api} on {report.name} (torch "
                        f"{report.torch_version})", quote=fact.raw)
        mine = ProfileField(value=fact.value, unit=PROFILE_FIELDS[fact.field], kind="device_query", source=source)
        merged, message = merge_field(fact.field, getattr(profile, fact.field), mine)
        if merged is not getattr(profile, fact.field):
            updates[fact.field] = merged
        if message:
            messages.append(message + (f" <- {fact.api}" if merged is mine else ""))
    changes = {name: field.model_dump() for name, field in updates.items()}
    if not profile.display_name:
        changes["display_name"] = report.name
    if profile.backend == "unknown":
        changes["backend"] = report.backend
    return HardwareProfile.model_validate({**profile.model_dump(), **changes}), messages
