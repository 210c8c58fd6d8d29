"""The task plug-in contract: everything chiplore's agent, knowledge base and verifier know about a kernel task.

A task is one folder ``kernels/<task>/`` plus one line in `TASK_MODULES`. The folder owns everything specific to
the task; ``agent/``, ``knowledge/`` and the verifier read it only through the objects defined here:

- `TaskSpec` (DESIGN.md, "Task spec"): entry point, seeded inputs, float32 reference, per-dtype tolerances,
  compulsory FLOPs/bytes (roofline floor), test and bench cases as data, random and hidden cases for the verifier,
  the inputs the verifier redraws per timed call and perturbs in place, the family's knobs.
- `KernelFamily` (`TaskSpec.family`): the optimized family as the agent searches it: features of a case read from
  tensor metadata, the dispatch class, the shared-memory footprint and fit of a configuration to the chip, the
  programs a launch has, the baseline kernel's structure as a family configuration.
- `FormulaVariables` (`TaskSpec.variables`): the case variables and helper functions the task's catalog formulas
  may use (knowledge.formula evaluates them; knowledge.variables adds the chip profile's and the diagnosis').
- `TaskFiles`: the task's candidate template (Jinja2, rendered by ``agent.family_space``) and its catalog file
  (patterns applied to the task, parameter rules, sources, examples; merged with the generic catalog by
  ``knowledge.catalog``), both package data of the task folder.
- `DropIn` (`TaskSpec.dropin`): the package name and import line of the report's drop-in
  (``chiplore report`` writes it; ``agent.dropin``).

Registering a task: create ``kernels/<task>/`` with a ``spec.py`` that defines ``TASK: TaskSpec`` and add
``"<task>": "kernels.<task>.spec"`` to `TASK_MODULES`. tests/kernels/test_task_contract.py checks every registered
task against this contract. docs/ARCHITECTURE.md, "Adding a task", walks through it.

This module imports only the standard library (a task folder imports only torch, triton and the standard library,
so that a kernel stays usable on its own, e.g. dropped back into SGLang).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Case:
    """One problem instance of a task, as data.

    Attributes:
        id: stable name (bench cases use the ids of the reference document, e.g. ``decode``).
        params: task-specific shape/feature parameters (plain JSON-able values). ``params["dtype"]`` is the input
            dtype name (``"bfloat16"``, ``"float16"``, ``"float32"``) when the case has one; the verifier's float32
            trial and the roofline read it there.
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
    """Elementwise bound ``|got - ref| <= atol + rtol * |ref|`` for one output dtype.

    ``ulps``, when set, adds a rounding bound for tasks whose exact answer is one rounding of a float32 result to
    the output dtype (a GEMM accumulated in float32): also ``|got - ref| <= ulps * ulp(ref) + ulp_atol``, with
    ``ulp(x) = eps * 2**floor(log2 |x|)`` of the output dtype (its spacing at |x|; the smallest subnormal below
    ``tiny``). One correct rounding errs by at most half an ulp; ``ulp_atol`` covers the float32 accumulation's
    own error near zero. Intermediate roundings to the output dtype (partials, accumulators) err by more than one
    ulp at a sizeable share of the elements, while staying far inside ``atol + rtol * |ref|``.
    """

    atol: float
    rtol: float
    ulps: float | None = None
    ulp_atol: float = 0.0


class ChipFacts(Protocol):
    """What a family reads of a chip: ``get(name)`` of a `hardware_profiles.schema.HardwareProfile` field
    (``num_compute_units``, ``smem_per_block_kb``, ``warp_size``, ``max_threads_per_block``, ...); None = unknown.
    A HardwareProfile is one; kernels never import hardware_profiles."""

    def get(self, name: str) -> Any: ...


@runtime_checkable
class KernelFamily(Protocol):
    """A task's optimized kernel family as the agent searches it (``agent.family_space.FamilySpace``).

    A configuration is a plain mapping ``{knob: value}`` over `TaskSpec.knobs`. A family candidate (rendered from
    `TaskFiles.candidate_template`) is a dispatch table ``{dispatch class: configuration}``: at every call it
    computes the class from tensor metadata with the same function `dispatch_class` uses, builds
    ``FamilyConfig(**configuration)`` and calls ``run_family(config, **entry-point arguments)``; both names are
    defined by `module`.

    Attributes:
        module: importable module a candidate imports (``kernels.extend_attention.family``); it defines
            ``FamilyConfig`` (keyword arguments = knobs; a knob left out takes the family's default) and
            ``run_family(config, **arguments)`` with the entry point's arguments, and the function the candidate
            computes its dispatch class with.
        value_labels: display names of special knob values, e.g. ``{"num_splits": {0: "auto"}}``.

    Optional method ``refit(config, features, chip) -> dict | None``: `config` (e.g. measured on another chip)
    fitted to `chip` for every case of the sequence `features`, or None; a family without it has configurations
    that do not fit the chip dropped instead of adapted (``agent.family_space.FamilySpace.refit``).
    Optional method ``tuned_config(features, chip) -> dict``: the task's tuned entry point's rule as one
    configuration for the cases `features` of a class; the offline proposer ranks it right after its top
    knowledge plan (``agent.family_space.FamilySpace.tuned_config``).
    """

    module: str
    value_labels: Mapping[str, Mapping[Any, str]]

    def features(self, case: Case) -> Any:
        """What a kernel can read of `case` from tensor metadata (shapes, dtypes; never benchmark names): a
        frozen, hashable value the other methods take (extend attention: ``CaseShape``)."""
        ...

    def dispatch_class(self, features: Any, ridge_flop_per_byte: float | None) -> str:
        """The class key a candidate dispatches on; `ridge_flop_per_byte` is the chip's roofline ridge point for
        the case's dtype (peak FLOP/s over peak bytes/s; None when the profile lacks a peak)."""
        ...

    def smem_kb(self, config: Mapping[str, Any], features: Any) -> float:
        """Shared memory of one program of `config` on a case with `features`, KiB, by the family's own formula."""
        ...

    def fits(self, config: Mapping[str, Any], features: Any, chip: ChipFacts) -> bool:
        """`config` runs as given on `chip` (shared memory per block, threads per block; the family does not have
        to shrink it). An unknown limit does not exclude."""
        ...

    def programs(self, config: Mapping[str, Any] | None, features: Any, chip: ChipFacts) -> int:
        """Programs with work a launch has (the occupancy diagnosis), by the kernels' own grid rules after the
        family's own fit to `chip`; `config` None is the task's baseline kernel."""
        ...

    def structure_config(self, features: Sequence[Any], chip: ChipFacts) -> dict[str, Any]:
        """The baseline kernel's structure as a family configuration (every knob, allowed values only) that fits
        every case of `features` on `chip`: where a run starts inside the family."""
        ...

    def defaults(self) -> dict[str, Any]:
        """The family's default value of every knob (what ``FamilyConfig()`` runs with)."""
        ...

    def candidate_limits(self, chip: ChipFacts) -> dict[str, Any] | None:
        """The chip limits a candidate file carries, ``{name: value}`` (the template's ``limits``, e.g. rendered as
        ``ChipLimits(**limits)`` for a family that never queries the device), or None: the family reads its limits
        itself, or the chip lacks one it needs."""
        ...


@dataclass(frozen=True)
class FormulaVariables:
    """Case variables and helper functions that the task's catalog formulas may use.

    Attributes:
        variables: name -> meaning and unit (``"P_max": "longest prefix of a sequence, tokens"``).
        functions: name -> call signature and meaning.
        values: ``(case) -> {name: value}`` for every name of `variables`.
        bind: ``(case) -> {name: callable}`` for every name of `functions`, bound to the case where they need it.
    """

    variables: Mapping[str, str]
    functions: Mapping[str, str]
    values: Callable[[Case], dict[str, Any]]
    bind: Callable[[Case], dict[str, Callable[..., Any]]]


@dataclass(frozen=True)
class TaskFiles:
    """Package data of the task folder (absolute paths; kernels never read them, agent and knowledge do).

    Attributes:
        candidate_template: Jinja2 template of a family candidate. Context: ``header`` (id, parent_id, generation,
            patterns, rationale, run_id, chip), ``configs`` (list of ``(class key, "knob=value, ...")``),
            ``family_module``, ``ridge`` (FLOP/byte or None), ``limits`` (`KernelFamily.candidate_limits`),
            ``signature`` and ``call_args`` (the entry point's parameters, wrapped), ``entry_point``.
        catalog: YAML with the task's part of the pattern catalog (``knowledge.catalog`` documents the format).
    """

    candidate_template: Path
    catalog: Path


@dataclass(frozen=True)
class DropIn:
    """The report's drop-in package (``agent.dropin.write_dropin``) for this task.

    Attributes:
        package: package folder name (``chiplore_extend_attention``).
        summary: its one-line docstring.
        replaces: the import line it replaces in the host code base (shown in the report).
        host_module: the host module the host code imports the entry point from when it runs (empty: none); the
            package then offers ``patch_host()``, which rebinds the entry point there, so one line
            (``import <package>; <package>.patch_host()``) run before the host imports it puts the kernel in.
        notes: Markdown for the package's README.md: where and when the host imports the entry point.
    """

    package: str
    summary: str
    replaces: str = ""
    host_module: str = ""
    notes: str = ""


def _no_hidden_cases(rng: random.Random, small: bool) -> tuple[tuple[str, Case], ...]:
    return ()


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
        random_case: ``(rng: random.Random, small: bool) -> Case``, shapes drawn at verification time (`small`:
            sizes for the Triton interpreter).
        hidden_cases: ``(rng, small) -> ((label, case), ...)``: cases the verifier draws at verification time to
            catch specific cheats of this task (extend attention: large logits, a long prefix, a long extend).
        dtype_case: ``(rng, dtype, small) -> Case``: a hidden case in input dtype `dtype` that the verifier adds
            when no other trial has that dtype (float32: compute must be IEEE float32). None: a random case with
            ``params["dtype"]`` replaced.
        fresh_inputs: inputs the verifier redraws in place (standard-normal values of the same shape and dtype, into
            the same storage, from a secret seed; names drawn in order from one generator) before every timed call
            and in its perturbation trial, so that no two timed calls see the same values and an output replayed
            from a cache keyed on pointers or shapes is caught. Name inputs for which standard-normal values are a
            valid input of every case: the per-call activations (extend attention: ``q_extend``; split-K GEMM:
            ``a``). Empty: timed calls reuse the values of their rotation sets.
        negated_inputs: inputs the perturbation trial negates in place as well (extend attention: the values
            ``v_extend``, ``v_buffer``); a name whose storage an earlier name already negated is skipped.
        knobs: the optimized family's knobs and their allowed values (the first value of a switch is the
            baseline's structure).
        family: the family as the agent searches it (`KernelFamily`); None for a task without a family.
        variables: names for the task's catalog formulas (`FormulaVariables`).
        files: the candidate template and the catalog file (`TaskFiles`).
        dropin: the report's drop-in package (`DropIn`).
        default_dtype: input dtype of a case whose params name none.
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
    fresh_inputs: tuple[str, ...] = ()
    negated_inputs: tuple[str, ...] = ()
    interpreter_tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    hidden_cases: Callable[[random.Random, bool], tuple[tuple[str, Case], ...]] = _no_hidden_cases
    dtype_case: Callable[[random.Random, str, bool], Case] | None = None
    family: KernelFamily | None = None
    variables: FormulaVariables | None = None
    files: TaskFiles | None = None
    dropin: DropIn | None = None
    default_dtype: str = "bfloat16"

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

    def dtype_of(self, case: Case) -> str:
        """Input dtype name of `case`: ``params["dtype"]``, else `default_dtype`."""
        return str(case.params.get("dtype") or self.default_dtype)

    def load_entry_point(self, which: str = "baseline") -> Callable[..., Any]:
        """Import the baseline (``which='baseline'``) or optimized (``'optimized'``) entry point."""
        module = self.baseline_module if which == "baseline" else self.optimized_module
        return getattr(importlib.import_module(module), self.entry_point)


#: The task registry: task name -> module that defines ``TASK: TaskSpec``. Imported on first use (a task's spec
#: imports torch), so that reading the registry costs nothing.
TASK_MODULES: dict[str, str] = {
    "extend_attention": "kernels.extend_attention.spec",
    "splitk_gemm": "kernels.splitk_gemm.spec",
}

#: The task commands use when none is named (``chiplore patterns``, ``chiplore demo``).
DEFAULT_TASK = "extend_attention"


def load_task(name: str) -> TaskSpec:
    """Return the `TaskSpec` registered under `name`.

    Raises:
        KeyError: unknown task; the message lists the known tasks.
    """
    if name not in TASK_MODULES:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASK_MODULES))}")
    return importlib.import_module(TASK_MODULES[name]).TASK
