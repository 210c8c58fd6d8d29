"""Launching one Triton kernel many times at one specialization, without Triton's per-call binding; recording the
launches of one call and replaying them on later calls of the same signature (`Recording`, `Replay`, `launch`).

``fn[grid](*args, **meta)`` (`JITFunction.run`) binds and specializes every argument, builds the kernel-cache key
and looks the compiled kernel up on each call: tens of microseconds of host time for a kernel with twenty
arguments, more than a skinny GEMM runs on the GPU. A `DirectLaunch` is made for one grid and one set of keyword
arguments (constexprs, num_warps, num_stages) by a caller that also guarantees that every call's positional
arguments specialize alike (same dtypes; pointers aligned alike to 16 bytes; the same integer values, or at least
the same ``== 1``, ``% 16 == 0`` and 32-bit range classes). Its first call per device goes through `JITFunction.run`
(compiling, or finding Triton's cached kernel) and keeps the compiled kernel that call returns; later calls hand
the arguments straight to the compiled kernel's launcher, which is what `JITFunction.run` ends with.

A kept compiled kernel is launched through `kernels.tensormap.prepare_launcher`'s `PreparedLauncher` where Triton's
launcher has the layout it knows (Triton 3.6's CUDA launcher): tensor maps encoded once per buffer, not per launch.
Where no compiled kernel comes back (the Triton interpreter; a launch a verifier disabled) or Triton's launch hooks
are set (`launch_hooks`: profilers), every call goes through `JITFunction.run`. A verifier that counts or disables
launches wraps `DirectLaunch.launch_compiled` as it wraps `JITFunction.run`.
Source: `triton.runtime.jit.JITFunction.run` and `triton.compiler.compiler.CompiledKernel.__getitem__` (Triton 3.6
to 3.9), whose launch is ``kernel.run(grid_x, grid_y, grid_z, stream, kernel.function, kernel.packed_metadata,
launch_metadata, enter_hook, exit_hook, *all_arguments)`` with constexprs in their positions (ignored there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import is_dataclass
from typing import Any

import torch
from triton import knobs
from triton.compiler.compiler import CompiledKernel
from triton.runtime.driver import driver

from kernels.tensormap import PreparedLauncher, prepare_launcher

#: Whether `DirectLaunch.launch_compiled` launches through a `kernels.tensormap.PreparedLauncher` where Triton's
#: launcher allows one (tensor maps encoded once per buffer); False: always ``compiled.run`` (a measurement switch).
PREPARED_LAUNCHERS = True


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
        self._prepared: dict[int, PreparedLauncher | None] = {}  # id(compiled kernel kept above) -> its launcher

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
        """Hand `args` and the constexpr tail to `compiled`'s launcher on `stream` (no hooks are set): through its
        `kernels.tensormap.PreparedLauncher` (tensor maps encoded once per buffer, `prepare_launcher`) where there
        is one and `PREPARED_LAUNCHERS` holds, else ``compiled.run``."""
        prepared = self._prepared.get(id(compiled), False)
        if prepared is False and self._keeps(compiled):
            prepared = self._prepared[id(compiled)] = prepare_launcher(compiled)
        if prepared and PREPARED_LAUNCHERS:
            prepared(self.grid, stream, compiled.function, compiled.packed_metadata, args, self.tail)
            return
        compiled.run(self.grid[0], self.grid[1], self.grid[2], stream, compiled.function, compiled.packed_metadata,
                     None, None, None, *args, *self.tail)

    def _keeps(self, compiled: CompiledKernel) -> bool:
        """Whether `compiled` is a kernel this launch keeps (so its id names it while its prepared launcher lives)."""
        return any(kept is compiled for kept in self._compiled.values())


def current_device_and_stream(device_type: str) -> tuple[int | None, int]:
    """(current device index, its current stream handle) from Triton's driver for CUDA tensors; (None, 0) for
    others (CPU tensors under the interpreter, where no driver is asked)."""
    if device_type != "cuda":
        return None, 0
    device = driver.active.get_current_device()
    return device, driver.active.get_current_stream(device)


# -- recording the launches of one call, replaying them on later calls of the same signature -------------------------


class Recording:
    """The launches one call makes through `launch`, as `DirectLaunch` kernels and argument recipes.

    A recipe names, for each positional argument, where a later call's value comes from: one of the call's `inputs`
    (by position: a later call passes its own tensors there), a tensor descriptor over one of them (rebuilt on the
    later call's tensor, same shape, strides and block), or the recorded value itself (numbers, flags, and tensors
    for which `stable(t)` holds: buffers the code reuses across calls, such as pooled workspaces). Any other tensor
    (one made during the call, e.g. a slice of an input) makes the recording not replayable, as does a launch whose
    grid is a callable, a parameter left to its default, or device work done outside `launch` (`refuse_replay`).
    The caller guarantees that a later call with the same signature (shapes, strides, dtypes, devices, alignment,
    scalar arguments, stream) makes the same launches with the same numbers.
    """

    def __init__(self, inputs: tuple, stable: Callable[[Any], bool]) -> None:
        self.inputs = inputs
        self.stable = stable
        # position of each input by identity (the first, if one object is passed twice: callers do not cache those)
        self._where: dict[int, int] = {}
        for index, t in enumerate(inputs):
            if t is not None:
                self._where.setdefault(id(t), index)
        self.launches: list[tuple[DirectLaunch, tuple, tuple, tuple]] = []
        self.refused: str | None = None

    def __enter__(self) -> Recording:
        _RECORDING.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _RECORDING.remove(self)

    def refuse(self, why: str) -> None:
        """Mark the call as not replayable (the first reason is kept)."""
        self.refused = self.refused or why

    def recipe(self, args: tuple) -> tuple[tuple, tuple, tuple] | None:
        """(template, input substitutions (position, input index), descriptor substitutions (position, input index,
        recorded descriptor)) of `args`, or None (and the recording refused) for an argument with no recipe. The
        template and descriptors hold no reference to the call's inputs (None in their places), so a kept replay
        does not keep the recorded call's tensors alive."""
        subs, descs = [], []
        template = list(args)
        where = self._where
        for pos, arg in enumerate(args):
            if type(arg) in _PLAIN:
                continue
            if isinstance(arg, torch.Tensor):
                index = where.get(id(arg))
                if index is not None:
                    subs.append((pos, index))
                    template[pos] = None
                elif not self.stable(arg):
                    self.refuse(f"argument {pos} is a tensor made during the call")
                    return None
            elif is_dataclass(arg) and isinstance(getattr(arg, "base", None), torch.Tensor):
                index = where.get(id(arg.base))
                if index is not None:
                    descs.append((pos, index, _rebased(arg, None)))
                    template[pos] = None
                elif not self.stable(arg.base):
                    self.refuse(f"argument {pos} is a descriptor over a tensor made during the call")
                    return None
            elif not isinstance(arg, (int, float, str)):
                self.refuse(f"argument {pos} is a {type(arg).__name__}")
                return None
        return tuple(template), tuple(subs), tuple(descs)

    def replay(self) -> Replay | None:
        """The `Replay` of the recorded launches, or None when the call is not replayable."""
        return None if self.refused else Replay(self.launches)


_RECORDING: list[Recording] = []
#: Argument types recorded as values (checked by exact type first; subclasses of int/float/str too, more slowly).
_PLAIN = frozenset({int, float, bool, str, type(None)})


def refuse_replay(why: str) -> None:
    """Tell the active `Recording`, if any, that the call did device work it cannot replay (e.g. a torch op)."""
    if _RECORDING:
        _RECORDING[-1].refuse(why)


def launch(fn: Any, grid: tuple[int, ...], *args: Any, **meta: Any) -> Any:
    """``fn[grid](*args, **meta)``; while a `Recording` is active, launched through a `DirectLaunch` (the first launch
    of a `DirectLaunch` goes through `JITFunction.run`) and recorded with its argument recipe."""
    recording = _RECORDING[-1] if _RECORDING else None
    if recording is None or recording.refused or callable(grid):
        if recording is not None:
            recording.refuse("a launch with a callable grid")
        return fn[grid](*args, **meta)
    try:
        direct = DirectLaunch(fn, grid, meta, len(args))
    except ValueError as exc:
        recording.refuse(str(exc))
        return fn[grid](*args, **meta)
    recipe = recording.recipe(args)
    direct(*args)
    if recipe is not None:
        recording.launches.append((direct, *recipe))
    return None


def _rebased(desc: Any, base: torch.Tensor | None) -> Any:
    """A copy of tensor descriptor `desc` (a dataclass with ``base``) over `base`, other fields kept: `base` has the
    recorded base's shape, strides, dtype and alignment, so the descriptor's checks hold as they did (None: a
    template that holds no tensor)."""
    new = object.__new__(type(desc))
    new.__dict__.update(desc.__dict__)
    new.__dict__["base"] = base
    return new


class Replay:
    """The launches of a `Recording`, made again with a later call's inputs (see `Recording` for the contract)."""

    def __init__(self, launches: list[tuple[DirectLaunch, tuple, tuple, tuple]]) -> None:
        self.launches = tuple(launches)

    def __call__(self, inputs: tuple, device: int | None, stream: int) -> None:
        """Launch on `device` / `stream` (`current_device_and_stream`) with `inputs` in the recorded positions."""
        hooks = launch_hooks()
        for direct, template, subs, descs in self.launches:
            args = list(template)
            for pos, index in subs:
                args[pos] = inputs[index]
            for pos, index, desc in descs:
                args[pos] = _rebased(desc, inputs[index])
            compiled = direct.compiled_for(device)
            if compiled is not None and not hooks:
                direct.launch_compiled(compiled, stream, tuple(args))
            else:
                direct.launch(device, stream, tuple(args))
