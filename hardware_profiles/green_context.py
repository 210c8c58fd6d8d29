"""Realising a virtual chip in this process: an SM partition (CUDA green context) and a shared-memory cap.

Torch, Triton and the standard library only; the profile side (which chip is virtual, checks against its host) is
`hardware_profiles.virtual`. This code is not part of any kernel the verifier trusts: it runs in the processes that
time for a virtual chip (the verifier's sandbox children, the benchmarks, the probe) before any candidate code.

- `enter_green_context(num_sms, device_index)`: ``torch.cuda.green_contexts.GreenContext.create(num_sms=..,
  device_id=..)`` then ``.set_context()`` (torch 2.10+; earlier builds named it ``make_current``). torch pushes the
  green context on the calling thread's CUDA context stack (``cuCtxPushCurrent``) and makes the null stream
  torch's current stream, so every kernel that thread launches afterwards on that stream (Triton's, cuBLAS's,
  torch's) runs on the partition's SMs. The context the driver converts from a green one (``cuCtxFromGreenCtx``)
  is the primary context with the green context's resources: memory and loaded modules are shared with it, and
  only work that depends on the resources (kernel launches) is confined (CUDA Driver API, "Green Contexts").
  Threads: the context stack and torch's current stream are per thread, so a thread other than the one that
  entered launches on the primary context, i.e. on the whole device; a second thread's `enter_green_context` is
  refused rather than answered as if it were inside. A process enters one partition for good: ``pop_context``
  would restore the previous context and stream, but nothing here times two chips in one process. The driver
  rounds the count up to its SM-group granularity (``cuDevSmResourceSplitByCount``; on compute capability 9.0 a
  multiple of 8 SMs, ``sm_partition_granularity`` reads it from CUDA 13 drivers); `driver_sm_count` asks the
  driver what its split gives, and `context_sm_count` what the current context reports (``cuCtxGetDevResource``).
  ``torch.cuda.get_device_properties().multi_processor_count`` keeps reporting the whole GPU inside.
- `install_shared_memory_cap(cap_bytes, label)`: every Triton kernel compiled in this process is checked when it is
  first loaded (`CompiledKernel._init_handles`, where Triton itself compares ``metadata.shared`` with the device
  limit): one that uses more shared memory than the cap raises Triton's own ``OutOfResources`` naming the cap,
  exactly as on a chip with that limit (a launcher that shrinks its tiles on ``OutOfResources`` does so here too),
  and every later launch of that kernel raises it again.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any

#: First CUDA driver with green contexts (CUDA 12.8 = 12080, as cuDriverGetVersion reports it).
GREEN_CONTEXT_MIN_DRIVER = 12080


class GreenContextUnavailable(RuntimeError):
    """The host cannot make a green context (no GPU, ROCm, a driver before 12.8, a torch without them)."""


@dataclass(frozen=True)
class EnteredContext:
    """A green context made current on one thread of this process: SMs asked for, SMs the driver's split gives
    for that request (`driver_sm_count`), SMs of the whole device, the thread (``threading.get_ident``), and the
    SMs the current context reports having (`context_sm_count`); the counts are None where unreadable."""

    device_index: int
    requested_sms: int
    driver_sms: int | None
    host_sms: int
    thread: int = 0
    context_sms: int | None = None


_HELD: dict[str, Any] = {}  # the green context object must outlive every launch: destroying it destroys the ctx


def cuda_driver_version() -> int | None:
    """cuDriverGetVersion of libcuda (e.g. 13000 for CUDA 13.0), or None without a CUDA driver."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return int(version.value)


def host_sm_count(device_index: int = 0) -> int:
    """Multiprocessors of the whole device (Triton's driver query, cuDeviceGetAttribute)."""
    import triton

    return int(triton.runtime.driver.active.utils.get_device_properties(device_index)["multiprocessor_count"])


def _green_contexts():
    """``torch.cuda.green_contexts``, or None when this torch has no such module."""
    import importlib

    try:
        return importlib.import_module("torch.cuda.green_contexts")
    except ImportError:
        return None


def green_context_problem(device_index: int = 0) -> str | None:
    """Why this host cannot make green contexts (one line), or None when it can."""
    import torch

    if torch.version.hip is not None:
        return f"ROCm (HIP {torch.version.hip}) has no CUDA green contexts"
    if not torch.cuda.is_available():
        return "no CUDA device is visible to torch"
    driver = cuda_driver_version()
    if driver is None or driver < GREEN_CONTEXT_MIN_DRIVER:
        shown = "unknown" if driver is None else f"{driver // 1000}.{driver % 1000 // 10}"
        return f"the CUDA driver ({shown}) is older than 12.8, the first with green contexts"
    module = _green_contexts()
    if module is None or not getattr(module, "GreenContext", None) or getattr(module, "SUPPORTED", True) is False:
        return f"torch {torch.__version__} was built without CUDA green contexts"
    if not 0 <= device_index < torch.cuda.device_count():
        return f"device {device_index} does not exist (torch sees {torch.cuda.device_count()})"
    return None


#: cuda.h: ``CU_DEV_RESOURCE_TYPE_SM``; a ``CUdevResource`` is an int type, 92 bytes of padding, then the union
#: whose ``sm`` member starts with ``smCount`` (CUDA 12.4+), followed by ``minSmPartitionSize`` and
#: ``smCoscheduledAlignment`` (CUDA 13.0+). The struct is 144 bytes in both; the buffer is larger to be safe.
_SM_RESOURCE, _SM_FIELDS_OFFSET, _RESOURCE_BUFFER = 1, 96, 256


def _libcuda():
    import ctypes

    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def _sm_fields(read) -> tuple[int, int, int] | None:
    """(smCount, minSmPartitionSize, smCoscheduledAlignment) of the ``CUdevResource`` that ``read(buffer)``
    fills (the last two 0 before CUDA 13); None when ``read`` returns an error or fails."""
    import ctypes
    import struct

    buffer = (ctypes.c_ubyte * _RESOURCE_BUFFER)()
    try:
        if read(ctypes.byref(buffer)) != 0:
            return None
    except (AttributeError, OSError, ctypes.ArgumentError):
        return None
    count, min_sms, alignment = struct.unpack_from("<III", bytes(buffer), _SM_FIELDS_OFFSET)
    return count, min_sms, alignment


def context_sm_count() -> int | None:
    """SMs of the CUDA context current on the calling thread (``cuCtxGetDevResource``, SM type): inside a green
    context, the SMs the driver gave it; None without a current context or when the driver cannot say."""
    import ctypes

    lib = _libcuda()
    if lib is None:
        return None
    ctx = ctypes.c_void_p()
    try:
        if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
            return None
        lib.cuCtxGetDevResource.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    except AttributeError:
        return None
    fields = _sm_fields(lambda buf: lib.cuCtxGetDevResource(ctx, buf, _SM_RESOURCE))
    return fields[0] if fields and fields[0] > 0 else None


def sm_partition_granularity(device_index: int = 0) -> tuple[int, int] | None:
    """(smallest partition, alignment) in SMs that the driver rounds a green context's count to
    (``cuDeviceGetDevResource``'s ``minSmPartitionSize`` and ``smCoscheduledAlignment``, CUDA 13.0+ drivers);
    None on older drivers or without a device."""
    import ctypes

    driver = cuda_driver_version()
    lib = _libcuda()
    if lib is None or driver is None or driver < 13000:
        return None
    device = ctypes.c_int()
    try:
        if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(device), device_index) != 0:
            return None
        lib.cuDeviceGetDevResource.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    except AttributeError:
        return None
    fields = _sm_fields(lambda buf: lib.cuDeviceGetDevResource(device, buf, _SM_RESOURCE))
    return (fields[1], fields[2]) if fields and fields[1] > 0 and fields[2] > 0 else None


def driver_sm_count(num_sms: int, device_index: int = 0) -> int | None:
    """SMs the driver gives a green context asked for `num_sms`: the first group of
    ``cuDevSmResourceSplitByCount(1 group, whole device, flags 0, minCount=num_sms)``, the split torch's
    ``GreenContext.create`` makes (through the ``cuda.bindings`` package); None when it cannot be read. The
    driver's answer to the same request, not a reading of the context (`context_sm_count` is that)."""
    try:
        from cuda.bindings import driver as drv  # noqa: PLC0415 - present where torch has green contexts
    except ImportError:
        return None
    try:
        drv.cuInit(0)
        err, device = drv.cuDeviceGet(device_index)
        if err != drv.CUresult.CUDA_SUCCESS:
            return None
        err, resource = drv.cuDeviceGetDevResource(device, drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM)
        if err != drv.CUresult.CUDA_SUCCESS:
            return None
        err, groups, count, _rest = drv.cuDevSmResourceSplitByCount(1, resource, 0, num_sms)
        if err != drv.CUresult.CUDA_SUCCESS or count < 1:
            return None
        group = groups[0] if isinstance(groups, list | tuple) else groups
        return int(group.sm.smCount)
    except Exception:  # noqa: BLE001 - an API shape this cuda.bindings lacks: the count is unreadable, not wrong
        return None


def enter_green_context(num_sms: int, device_index: int = 0) -> EnteredContext:
    """Make a green context of `num_sms` SMs of device `device_index` current on the calling thread for the rest
    of this process (idempotent for the same request on the same thread). See the module docstring.

    Raises:
        GreenContextUnavailable: the host cannot make one, `num_sms` exceeds the device's SMs, or this process
            already entered another partition or entered on another thread (one line).
    """
    import threading

    held = _HELD.get("entered")
    if held is not None:
        if (held.requested_sms, held.device_index) != (num_sms, device_index):
            raise GreenContextUnavailable(f"this process already runs in a green context of {held.requested_sms} "
                                          f"SMs of device {held.device_index}")
        if held.thread != threading.get_ident():
            raise GreenContextUnavailable(f"the green context of {num_sms} SMs is current on another thread of this "
                                          "process; kernels launched from this one would run on the whole device")
        return held
    problem = green_context_problem(device_index)
    if problem:
        raise GreenContextUnavailable(problem)
    import torch

    host = host_sm_count(device_index)
    if not 0 < num_sms <= host:
        raise GreenContextUnavailable(f"a partition of {num_sms} SMs does not fit device {device_index}, which has "
                                      f"{host}")
    torch.cuda.set_device(device_index)
    context = _green_contexts().GreenContext.create(num_sms=num_sms, device_id=device_index)
    enter = getattr(context, "set_context", None) or context.make_current
    enter()
    entered = EnteredContext(device_index, num_sms, driver_sm_count(num_sms, device_index), host,
                             threading.get_ident(), context_sm_count())
    _HELD.update(context=context, entered=entered)
    return entered


def entered_green_context() -> EnteredContext | None:
    """The green context this process entered, or None."""
    return _HELD.get("entered")


def over_cap(shared_bytes: int, cap_bytes: int | None) -> bool:
    """Whether a kernel of `shared_bytes` of shared memory exceeds a cap (None: no cap)."""
    return cap_bytes is not None and int(shared_bytes) > int(cap_bytes)


def _raise_copy(err: BaseException, *args: Any, **kwargs: Any) -> None:
    raise copy.deepcopy(err)


def install_shared_memory_cap(cap_bytes: int, label: str) -> None:
    """Refuse every Triton kernel whose ``metadata.shared`` exceeds `cap_bytes` when it is first loaded, with
    Triton's ``OutOfResources(required, cap_bytes, "shared memory (<label>)")`` (see the module docstring).
    Installing again replaces the cap."""
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.errors import OutOfResources

    original = getattr(CompiledKernel._init_handles, "_uncapped", CompiledKernel._init_handles)
    name = f"shared memory ({label})"

    def _init_handles(self: Any) -> None:
        if self.module is None and over_cap(self.metadata.shared, cap_bytes):
            err = OutOfResources(self.metadata.shared, int(cap_bytes), name)
            self._run = functools.partial(_raise_copy, err)
            raise err
        original(self)

    _init_handles._uncapped = original  # type: ignore[attr-defined]
    _init_handles._cap_bytes = int(cap_bytes)  # type: ignore[attr-defined]
    CompiledKernel._init_handles = _init_handles  # type: ignore[method-assign]


def shared_memory_cap() -> int | None:
    """The installed cap in bytes, or None."""
    from triton.compiler.compiler import CompiledKernel

    return getattr(CompiledKernel._init_handles, "_cap_bytes", None)
