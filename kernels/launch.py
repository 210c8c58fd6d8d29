"""Launching one Triton kernel many times at one specialization, without Triton's per-call binding.

``fn[grid](*args, **meta)`` (`JITFunction.run`) binds and specializes every argument, builds the kernel-cache key
and looks the compiled kernel up on each call: tens of microseconds of host time for a kernel with twenty
arguments, more than a skinny GEMM runs on the GPU. A `DirectLaunch` is made for one grid and one set of keyword
arguments (constexprs, num_warps, num_stages) by a caller that also guarantees that every call's positional
arguments specialize alike (same dtypes; pointers aligned alike to 16 bytes; the same integer values, or at least
the same ``== 1``, ``% 16 == 0`` and 32-bit range classes). Its first call per device goes through `JITFunction.run`
(compiling, or finding Triton's cached kernel) and keeps the compiled kernel that call returns; later calls hand
the arguments straight to the compiled kernel's launcher, which is what `JITFunction.run` ends with.

Where no compiled kernel comes back (the Triton interpreter; a launch a verifier disabled) or Triton's launch hooks
are set (`launch_hooks`: profilers), every call goes through `JITFunction.run`. A verifier that counts or disables
launches wraps `DirectLaunch.launch_compiled` as it wraps `JITFunction.run`.
Source: `triton.runtime.jit.JITFunction.run` and `triton.compiler.compiler.CompiledKernel.__getitem__` (Triton 3.6
to 3.9), whose launch is ``kernel.run(grid_x, grid_y, grid_z, stream, kernel.function, kernel.packed_metadata,
launch_metadata, enter_hook, exit_hook, *all_arguments)`` with constexprs in their positions (ignored there).
"""

from __future__ import annotations

from typing import Any

from triton import knobs
from triton.compiler.compiler import CompiledKernel
from triton.runtime.driver import driver


def launch_hooks() -> bool:
    """Whether Triton's launch enter or exit hook is set: a callable (older Triton), or a `knobs.HookChain` with
    calls in it (an empty chain, Triton 3.6's default, is no hook)."""
    hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    return any(getattr(hook, "calls", hook) for hook in hooks)


class DirectLaunch:
    """One Triton kernel at a fixed grid and fixed keyword arguments, called with its positional arguments.

    Attributes:
        fn: the `triton.jit` function. grid: (x, y, z) programs. meta: keyword arguments of ``fn[grid](...)``.
        tail: the values of the parameters after the positional ones, in parameter order (the constexprs in
            `meta`), passed to the compiled kernel's launcher.
    """

    def __init__(self, fn: Any, grid: tuple[int, ...], meta: dict[str, Any], positional: int) -> None:
        """`positional`: how many leading parameters of `fn` each call passes; every later one must be in `meta`.

        Raises:
            ValueError: a parameter after the positional ones is not in `meta`.
        """
        names = list(getattr(fn, "arg_names", ()))
        missing = [name for name in names[positional:] if name not in meta]
        if missing:
            raise ValueError(f"DirectLaunch: parameters {missing} of {getattr(fn, '__name__', fn)} are neither "
                             "positional nor in meta")
        self.fn = fn
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.meta = dict(meta)
        self.tail = tuple(self.meta[name] for name in names[positional:])
        self._compiled: dict[int, CompiledKernel] = {}

    def __call__(self, *args: Any) -> None:
        """Launch on the current device and stream (asynchronous, like ``fn[grid](*args, **meta)``)."""
        if self._compiled:
            device = driver.active.get_current_device()
            self.launch(device, driver.active.get_current_stream(device), args)
        else:
            self.launch(None, 0, args)

    def launch(self, device: int | None, stream: int, args: tuple) -> None:
        """Launch with `args` on `device` (the current device, as Triton's driver reports it) and `stream` (its
        current stream): through the kept compiled kernel when there is one for `device` and no launch hook is
        set, else through `JITFunction.run` (which then queries device and stream itself)."""
        compiled = self._compiled.get(device)
        if compiled is not None and not launch_hooks():
            self.launch_compiled(compiled, stream, args)
            return
        result = self.fn[self.grid](*args, **self.meta)
        if isinstance(result, CompiledKernel):
            self._compiled[driver.active.get_current_device()] = result

    def compiled_for(self, device: int | None) -> CompiledKernel | None:
        """The compiled kernel kept for `device`, if a launch there returned one."""
        return self._compiled.get(device)

    def launch_compiled(self, compiled: CompiledKernel, stream: int, args: tuple) -> None:
        """Hand `args` and the constexpr tail to `compiled`'s launcher on `stream` (no hooks are set)."""
        compiled.run(self.grid[0], self.grid[1], self.grid[2], stream, compiled.function, compiled.packed_metadata,
                     None, None, None, *args, *self.tail)


def current_device_and_stream(device_type: str) -> tuple[int | None, int]:
    """(current device index, its current stream handle) from Triton's driver for CUDA tensors; (None, 0) for
    others (CPU tensors under the interpreter, where no driver is asked)."""
    if device_type != "cuda":
        return None, 0
    device = driver.active.get_current_device()
    return device, driver.active.get_current_stream(device)
