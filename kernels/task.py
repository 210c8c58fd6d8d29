"""Declarative kernel-task contract (DESIGN.md, "Task spec").

A task names its entry point and signature, builds seeded inputs for a `Case`, computes a float32 reference,
states per-dtype tolerances and the compulsory FLOPs/bytes that place every timing against the roofline floor,
and lists its test cases (edge cases) and bench cases (realistic) as data. This module imports only torch and
the standard library so that a kernel folder stays usable on its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Case:
    """One problem instance of a task, as data.

    Attributes:
        id: stable name (bench cases use the ids of the reference document, e.g. ``decode``).
        params: task-specific shape/feature parameters (plain JSON-able values).
        seed: default seed for `TaskSpec.make_inputs`; verifiers draw fresh secret seeds instead.
        case_class: coarse class used by findings and pattern ranking (e.g. ``memory-bound-decode``).
    """

    id: str
    params: Mapping[str, Any]
    seed: int = 0
    case_class: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def to_json(self) -> dict[str, Any]:
        """JSON-able form ``{"id", "params", "seed", "case_class"}``."""
        return {"id": self.id, "params": dict(self.params), "seed": self.seed, "case_class": self.case_class}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Case:
        """Inverse of `to_json`."""
        return Case(data["id"], data["params"], int(data.get("seed", 0)), data.get("case_class", ""))


@dataclass(frozen=True)
class Tolerance:
    """Elementwise bound ``|got - ref| <= atol + rtol * |ref|`` for one output dtype."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class TaskSpec:
    """Everything a verifier, benchmark or agent needs to know about one kernel task.

    Attributes:
        name: task name used on the command line (``extend_attention``).
        entry_point: function name a candidate file must define.
        baseline_module / optimized_module: importable modules defining `entry_point`.
        output_args: names of arguments the entry point writes in place (compared with the reference).
        make_inputs: ``(case, seed, device, dtype) -> dict[str, Any]`` keyword arguments of the entry
            point, with outputs allocated; deterministic in `seed`.
        reference: ``(inputs) -> dict[output_arg, Tensor]`` computed in float32 or wider.
        tolerances: per input dtype name (``"bfloat16"``, ``"float16"``, ``"float32"``), for kernels on a GPU.
        interpreter_tolerances: per dtype name, overrides of `tolerances` for kernels run by the Triton
            interpreter on the CPU (``TRITON_INTERPRET=1``), whose dots are exact in the input precision (numpy).
            Missing dtypes use `tolerances`.
        flops / bytes: compulsory FLOPs and bytes of device-memory traffic of a case (roofline floor).
        test_cases / bench_cases: edge cases and realistic cases, as data with seeds.
        random_case: ``(rng: random.Random, small: bool) -> Case``, shapes drawn at verification time.
        knobs: the optimized family's knobs and their allowed values.
    """

    name: str
    entry_point: str
    baseline_module: str
    optimized_module: str
    output_args: tuple[str, ...]
    make_inputs: Callable[..., dict[str, Any]]
    reference: Callable[[Mapping[str, Any]], dict[str, Any]]
    tolerances: Mapping[str, Tolerance]
    flops: Callable[[Case], float]
    bytes: Callable[[Case], float]
    test_cases: tuple[Case, ...]
    bench_cases: tuple[Case, ...]
    random_case: Callable[..., Case]
    knobs: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    interpreter_tolerances: Mapping[str, Tolerance] = field(default_factory=dict)

    def tolerance(self, dtype: str, interpreter: bool = False) -> Tolerance:
        """Tolerance for outputs of input dtype `dtype` (``"float32"``), under the interpreter if `interpreter`.

        Raises:
            KeyError: no tolerance for `dtype`.
        """
        if interpreter and dtype in self.interpreter_tolerances:
            return self.interpreter_tolerances[dtype]
        return self.tolerances[dtype]

    def case(self, case_id: str) -> Case:
        """Bench or test case by id.

        Raises:
            KeyError: unknown id; the message lists the known ids.
        """
        for c in (*self.bench_cases, *self.test_cases):
            if c.id == case_id:
                return c
        known = [c.id for c in (*self.bench_cases, *self.test_cases)]
        raise KeyError(f"unknown case {case_id!r} for task {self.name!r}; known: {', '.join(known)}")

    def load_entry_point(self, which: str = "baseline") -> Callable[..., Any]:
        """Import the baseline (``which='baseline'``) or optimized (``'optimized'``) entry point."""
        module = self.baseline_module if which == "baseline" else self.optimized_module
        return getattr(importlib.import_module(module), self.entry_point)


#: Registry of task name -> module that defines ``TASK: TaskSpec``.
TASK_MODULES: dict[str, str] = {"extend_attention": "kernels.extend_attention.spec"}


def load_task(name: str) -> TaskSpec:
    """Return the `TaskSpec` registered under `name`.

    Raises:
        KeyError: unknown task; the message lists the known tasks.
    """
    if name not in TASK_MODULES:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASK_MODULES))}")
    return importlib.import_module(TASK_MODULES[name]).TASK
