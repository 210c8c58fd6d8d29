"""The sandbox child: one fresh process per candidate (forked from the zygote, see `sandbox`).

It confines itself (new session, scratch working directory and HOME, file-size/address-space limits, no
inherited descriptors besides the private channel), installs the guards, imports the candidate under them and
runs the plan: every trial on freshly generated inputs with a NaN-filled output and NaN-poisoned free memory,
inputs cloned before and compared after, then (GPU) the timing loop. It reports digests, launch counts,
outputs and timings to the parent; it never sees a reference output and judges nothing numerically.
"""

from __future__ import annotations

import collections
import importlib.util
import os
import resource
import sys
import tempfile
import threading
import time
import traceback
import types
from pathlib import Path
from typing import Any

import torch

from agent.verifier import policy
from agent.verifier.channel import MessageReader, write_message
from agent.verifier.fs_isolation import gpu_device_paths, restrict_writes
from agent.verifier.guard import STATE, FrameJudge, Guards, SandboxViolation, poison_free_memory
from agent.verifier.interpreter_fidelity import emulate_tf32_dots
from agent.verifier.plan import (
    Plan,
    TimedCase,
    Trial,
    apply_perturbation,
    fresh_values,
    input_digest,
    make_trial_inputs,
    prefill_output,
    redraw_inputs,
)
from agent.verifier.signature import bind_call, expected_parameters
from agent.verifier.timing import exposed_reps, gpu_timer, timed_reps, wall_timer
from hardware_profiles.virtual import enter_partition
from kernels.chip import ChipLimits, set_chip_limits
from kernels.task import load_task

_COMPILE_ERRORS = frozenset({"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "PTXASError",
                             "UnsupportedLanguageConstruct", "MLIRCompilationError", "SyntaxError",
                             "IndentationError", "ImportError", "ModuleNotFoundError", "NameError"})


def confine(request: dict[str, Any], keep_fds: tuple[int, ...]) -> None:
    """Process-level confinement of the child (called right after fork)."""
    os.setsid()
    scratch = request["scratch"]
    log = os.open(os.path.join(scratch, "candidate.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd > 2 and fd not in keep_fds:
            try:
                os.close(fd)
            except OSError:
                pass
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (request["max_file_bytes"], request["max_file_bytes"]))
    cpu_seconds = int(request.get("cpu_seconds", 0))
    if cpu_seconds:  # a backstop if the verifier itself dies and can no longer enforce the wall-clock timeout
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    if request.get("address_space_bytes"):
        limit = _current_vm_bytes() + request["address_space_bytes"]
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.chdir(scratch)
    os.environ.update(HOME=scratch, TMPDIR=scratch)  # TRITON_CACHE_DIR stays the zygote's: compiled by Triton only
    tempfile.tempdir = scratch  # the zygote's tempfile cached its TMPDIR (scratch base); Triton's compiler uses it
    sys.dont_write_bytecode = True
    sys.path[:] = [p for p in sys.path if p and os.path.isabs(p) and not p.startswith(scratch)]
    if request.get("fs_isolation"):  # writes only to its scratch, the shared Triton cache, its own /proc entries
        # (H200, scripts/probe_landlock_cuda.py: CUDA fails to initialize without /proc/self, error 304) and, on a
        # GPU only, the driver's device nodes (file rights only; all of /dev with gpu_dev_writes="all", /dev/shm
        # with it -- red team, session 5)
        cache = os.environ.get("TRITON_CACHE_DIR", "")
        if cache:  # Landlock rules name existing directories: Triton would create it after the restriction
            os.makedirs(cache, exist_ok=True)
        writable, devices, note = [scratch, cache, "/proc/self"], [], ""
        if request.get("gpu") and request.get("gpu_dev_writes", "nodes") == "all":
            writable.append("/dev")
            note = "; GPU: all of /dev"
        elif request.get("gpu"):
            devices = gpu_device_paths(hip=bool(torch.version.hip))
            note = f"; GPU: {len(devices)} device paths"
        status = restrict_writes([w for w in writable if w], devices)
        request["fs_isolation_status"] = status + (note if status.startswith("landlock") else "")
    else:
        request["fs_isolation_status"] = "off"


def _current_vm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0



#: Values a candidate module may not hold at module level after its import: containers and tensors keep state
#: between calls (a call counter, a cache of answers) however they were obtained -- a literal, a helper's return
#: value, an attribute of the candidate's own kernel.
MUTABLE_MODULE_TYPES: tuple[type, ...] = (dict, list, set, bytearray, collections.deque, torch.Tensor)


def module_state_problems(module: types.ModuleType) -> list[str]:
    """One problem per module-level name of the imported candidate bound to a mutable container or tensor
    (`MUTABLE_MODULE_TYPES`); dunder names (``__builtins__``, ``__annotations__``) are the interpreter's."""
    return [f"module-level {name} holds a {type(value).__name__} after import (state that survives between calls)"
            for name, value in vars(module).items()
            if not (name.startswith("__") and name.endswith("__")) and isinstance(value, MUTABLE_MODULE_TYPES)]

class Child:
    """Runs one plan against one candidate and reports over the channel."""

    def __init__(self, request: dict[str, Any], in_fd: int, out_fd: int):
        self.request = request
        self.reader = MessageReader(in_fd)
        self.out_fd = out_fd
        self.plan = Plan.from_json(request["plan"])
        self.task = load_task(self.plan.task)
        self.output = self.task.output_args[0]
        self.device = torch.device(self.plan.device)
        self.candidate = request["candidate"]
        self.kept: dict[int, dict[str, Any]] = {}
        self.bases = {t.base for t in self.plan.trials if t.base is not None}
        self.parameters = expected_parameters(self.task)
        if self.device.type == "cuda":
            torch.cuda.set_device(0)
            torch.cuda.init()
            # a virtual chip's partition before anything touches the GPU: every kernel of this child runs in it
            enter_partition(request.get("partition"))
        if request.get("chip_limits"):  # the limits of the chip being verified, for every kernel the candidate calls
            set_chip_limits(ChipLimits.from_dict(request["chip_limits"]))
        if self.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1":
            emulate_tf32_dots()  # the interpreter's float32 dots round as the GPU's would
        package = policy.kernel_package(self.task.optimized_module)
        self.guards = Guards(FrameJudge(Path(request["root"])), package, self.device, request["compute_guard"])

    def send(self, header: dict[str, Any], tensor: torch.Tensor | None = None) -> None:
        write_message(self.out_fd, header, tensor)

    # -- reporting -----------------------------------------------------------------------------------------
    def _violation(self, label: str, problems: list[str]) -> None:
        self.send({"type": "violation", "label": label, "problems": problems})

    def _exception(self, exc: BaseException, label: str, importing: bool = False) -> None:
        if isinstance(exc, SandboxViolation) or STATE.violations:
            self._violation(label, list(STATE.violations) or [str(exc)])
            return
        chain = [exc]
        while chain[-1].__cause__ or chain[-1].__context__:
            chain.append(chain[-1].__cause__ or chain[-1].__context__)  # type: ignore[arg-type]
        compile_like = any(type(e).__name__ in _COMPILE_ERRORS or type(e).__module__.startswith("triton.compiler")
                           for e in chain)
        stage = "compile_error" if compile_like or (importing and isinstance(exc, Exception)) else "runtime_error"
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == self.candidate]
        where = f" (candidate line {lines[-1]})" if lines else ""
        text = "".join(traceback.format_exception(exc))[-3000:]
        self.send({"type": "error", "stage": stage, "label": label,
                   "summary": f"{type(exc).__name__}: {str(exc)[:400]}{where}", "traceback": text})

    # -- candidate ---------------------------------------------------------------------------------------
    def load(self) -> types.FunctionType | None:
        spec = importlib.util.spec_from_file_location("candidate", self.candidate)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["candidate"] = module
        try:
            with self.guards.armed():
                spec.loader.exec_module(module)  # type: ignore[union-attr]
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a verdict
            self._exception(exc, "import", importing=True)
            return None
        fn = vars(module).get(self.task.entry_point)
        if not isinstance(fn, types.FunctionType) or fn.__code__.co_filename != self.candidate:
            self.send({"type": "error", "stage": "compile_error", "label": "import",
                       "summary": f"{self.task.entry_point} is not a function defined in the candidate file",
                       "traceback": ""})
            return None
        problems = list(STATE.violations) + [f"replaced {n} while importing" for n in self.guards.tampered()]
        problems += module_state_problems(module)
        if problems:
            self._violation("import", problems)
            return None
        return fn

    def call(self, fn: types.FunctionType, inputs: dict[str, Any], label: str, disable_kernels: bool = False,
             prefill: str = "nan", prefill_seed: int = 0) -> dict[str, Any] | None:
        """One guarded call with every before/after check, the output prefilled as `prefill` says
        (`plan.prefill_output`); None after reporting a failure."""
        out = inputs[self.output]
        digest = input_digest(inputs, skip=(self.output,))
        clones = {k: v.clone() for k, v in inputs.items() if isinstance(v, torch.Tensor) and k != self.output}
        poison_free_memory(self.device, out.numel() * out.element_size(), prefill, prefill_seed)
        prefill_output(out, prefill, prefill_seed)  # type: ignore[arg-type]
        storage = (out.data_ptr(), out.untyped_storage().data_ptr(), out.untyped_storage().nbytes())
        threads = set(threading.enumerate())
        stream = torch.cuda.current_stream() if self.device.type == "cuda" else None
        STATE.launches = 0
        STATE.violations.clear()
        t0 = time.perf_counter()
        try:
            kwargs = bind_call(fn, inputs, self.parameters)
            with self.guards.armed(disable_kernels):
                returned = fn(**kwargs)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:  # noqa: BLE001
            if not (disable_kernels and isinstance(exc, Exception) and not STATE.violations):
                self._exception(exc, label)
                return None
            returned = None  # without its kernels a candidate may fail: that is the expected outcome
        seconds = time.perf_counter() - t0
        problems = list(STATE.violations) + self.guards.after_call(threads, stream)
        problems += self._contract_problems(returned, out, storage, inputs, clones)
        if problems:
            self._violation(label, problems)
            return None
        return {"digest": digest, "digest_after": input_digest(inputs, skip=(self.output,)),
                "launches": STATE.launches, "seconds": seconds}

    def _contract_problems(self, returned: object, out: torch.Tensor, storage: tuple[int, int, int],
                           inputs: dict[str, Any], clones: dict[str, torch.Tensor]) -> list[str]:
        problems = []
        if returned is not None and returned is not out:
            problems.append(f"returned {type(returned).__name__} instead of writing {self.output} in place "
                            "(passthrough)")
        if (out.data_ptr(), out.untyped_storage().data_ptr(), out.untyped_storage().nbytes()) != storage:
            problems.append(f"{self.output}'s storage was replaced (aliasing)")
        o_lo, o_hi = out.untyped_storage().data_ptr(), out.untyped_storage().data_ptr() + out.untyped_storage().nbytes()
        for name, value in inputs.items():
            if isinstance(value, torch.Tensor) and name != self.output and value.numel():
                lo = value.untyped_storage().data_ptr()
                if lo < o_hi and o_lo < lo + value.untyped_storage().nbytes():
                    problems.append(f"{self.output} shares memory with input {name}")
        for name, before in clones.items():
            now = inputs[name]
            if not _bit_equal(before, now):
                problems.append(f"input {name} was modified by the candidate (input mutation)")
        return problems

    # -- plan ---------------------------------------------------------------------------------------------
    def run(self) -> int:
        fn = self.load()
        if fn is None:
            return 1
        self.send({"type": "ready", "fs_isolation": self.request.get("fs_isolation_status", "off")})
        for trial in self.plan.trials:
            if not self.run_trial(fn, trial):
                return 1
        if self.plan.timing is not None:
            self.send({"type": "await_go"})
            message = self.reader.read()
            if message is None or message[0].get("type") != "go":
                return 0
            for timed in self.plan.timing.cases:
                if not self.run_timed_case(fn, timed):
                    return 1
        self.send({"type": "done"})
        return 0

    def run_trial(self, fn: types.FunctionType, trial: Trial) -> bool:
        if trial.kind == "perturb" and trial.base is not None:
            inputs = self.kept.pop(trial.base)
            apply_perturbation(self.task, inputs, trial)
        else:
            inputs = make_trial_inputs(self.task, trial.case, trial.seed, self.device)
        if trial.id in self.bases:
            self.kept[trial.id] = inputs
        label = f"trial {trial.id} ({trial.case.id}, {trial.label})"
        facts = self.call(fn, inputs, label, disable_kernels=trial.kind == "ablate", prefill=trial.prefill,
                          prefill_seed=trial.seed)
        if facts is None:
            return False
        self.send({"type": "trial", "id": trial.id, **facts}, inputs[self.output])
        return True

    def run_timed_case(self, fn: types.FunctionType, timed: TimedCase) -> bool:
        timing = self.plan.timing
        assert timing is not None
        sets = [make_trial_inputs(self.task, timed.case, seed, self.device) for seed in timed.seeds]
        digests = [input_digest(s, skip=(self.output,)) for s in sets]
        clones = [{k: v.clone() for k, v in s.items() if isinstance(v, torch.Tensor) and k != self.output}
                  for s in sets]
        cuda = self.device.type == "cuda"
        threads, stream = set(threading.enumerate()), torch.cuda.current_stream() if cuda else None
        label = f"timing {timed.case.id}"
        STATE.violations.clear()

        names: set[str] = set()

        def call(args: dict[str, Any]) -> None:
            if not names:  # once per case (first call, untimed warm-up): the names its calls pass
                names.update(bind_call(fn, args, self.parameters))
            kwargs = {k: v for k, v in args.items() if k in names}
            with self.guards.armed():
                returned = fn(**kwargs)
            if returned is not None and returned is not args[self.output]:
                raise SandboxViolation(f"returned {type(returned).__name__} instead of writing in place")

        last_seed: dict[int, int] = {}

        out_bytes = sets[0][self.output].numel() * sets[0][self.output].element_size()

        def refresh(args: dict[str, Any], i: int) -> None:
            # free memory refilled before every timed call too (outside the timed region): a workspace a call freed
            # must not reach the next call, or a memo of what the kept inputs give survives across calls
            poison_free_memory(self.device, out_bytes, "nan", timed.call_seeds[i])
            redraw_inputs(self.task, args, timed.call_seeds[i])
            last_seed[id(args)] = timed.call_seeds[i]

        self.send({"type": "case_begin", "case": timed.case.id})
        try:
            result = timed_reps(call, sets, self.output, warmup=timing.warmup, reps=timing.reps,
                                capture=set(timed.captures), mark=lambda k: self.send({"type": "m", "k": k}),
                                refresh=refresh, timer=gpu_timer if cuda else wall_timer,
                                exposed=exposed_reps(timed.call_seeds, timing.reps))
        except BaseException as exc:  # noqa: BLE001
            self._exception(exc, label)
            return False
        problems = list(STATE.violations) + self.guards.after_call(threads, stream)
        for i, (s, c) in enumerate(zip(sets, clones)):
            if id(s) in last_seed:
                c.update(fresh_values(self.task, s, last_seed[id(s)]))
            problems += [f"input {k} of rotation set {i} was modified by the candidate (input mutation)"
                         for k, v in c.items() if not _bit_equal(v, s[k])]
        if problems:
            self._violation(label, problems)
            return False
        self.send({"type": "timing", "case": timed.case.id, "event_us": result.event_us,
                   "wall_us": result.wall_us, "cover_us": result.cover_us, "digests": digests,
                   "captures": [list(k) for k in sorted(result.captured)]})
        for (rep, s), tensor in sorted(result.captured.items()):
            self.send({"type": "capture", "case": timed.case.id, "rep": rep, "set": s}, tensor)
        return True


def _bit_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == torch.bool:
        return bool(torch.equal(a, b))
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return bool(torch.equal(a.contiguous().view(view), b.contiguous().view(view)))


def child_main(request: dict[str, Any], in_fd: int, out_fd: int) -> int:
    """Entry point in the forked child; returns the exit code."""
    confine(request, (in_fd, out_fd))
    try:
        return Child(request, in_fd, out_fd).run()
    except BaseException as exc:  # noqa: BLE001 - reported, then the process ends
        try:
            write_message(out_fd, {"type": "error", "stage": "runtime_error", "label": "sandbox",
                                   "summary": f"sandbox failure: {type(exc).__name__}: {str(exc)[:400]}",
                                   "traceback": "".join(traceback.format_exception(exc))[-3000:]})
        except OSError:
            pass
        return 1
