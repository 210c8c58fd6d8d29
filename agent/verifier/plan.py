"""What one verification runs: trials with secret fresh seeds, hidden random shapes, adversarial magnitudes,
float32 inputs, an in-place perturbation, a kernel ablation, and (on a GPU) the timing plan.

The plan is built in the parent from ``os.urandom``; the child receives it and regenerates the same inputs with
`TaskSpec.make_inputs`. The parent regenerates them too, computes the reference itself, and compares input
digests so that both sides provably worked on the same data. Nothing in the plan is the expected output.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch

from core.errors import BadInputError
from kernels.task import Case, TaskSpec

TrialKind = Literal["check", "perturb", "ablate"]

#: What the output holds when the candidate is called. "nan": an element the kernel does not write fails as NaN.
#: "zeros" (fresh memory) and "noise" (standard-normal values in the output dtype: a stale earlier result) are what
#: an output allocated with ``torch.empty`` holds in real use; an element left unwritten fails those too (it is not
#: the answer). Drawn per trial from the secret seed, so a kernel that reads its output first (only an answer
#: accumulated into a prefilled output depends on it) and computes honestly only when it finds the verifier's NaN
#: is checked on the other fills as well.
Prefill = Literal["nan", "zeros", "noise"]
PREFILLS: tuple[Prefill, ...] = ("nan", "zeros", "noise")
#: Labels of the check trials whose prefill is drawn (not the first trial, nor a perturbation's base); the others
#: (the first hidden shape and its perturbation, the task's hidden cases, the ablation) keep NaN, which names an
#: unwritten output as such in the first failing trial.
DRAWN_PREFILL_LABELS = frozenset({"bench case", "test case", "hidden random shape", "repeat with a new seed"})

#: Input dtypes every plan checks at least once, with a hidden case of their own if no other trial uses them.
#: float32: a float32 call must be computed in IEEE float32 (tf32 or float16 compute fails the float32 tolerance of
#: the task), and on a GPU no bench or random case is float32, so without this trial nothing would check it there.
#: Over 40 such small float32 extend-attention cases the cheat tests/verifier/cheats/fp32_as_fp16.py erred by
#: >= 2.7e-4 (CPU).
REQUIRED_DTYPES = ("float32",)


@dataclass(frozen=True)
class Trial:
    """One call of the candidate. ``base`` names the trial whose input tensors a perturbation edits in place: all
    of `perturb_inputs`, or with ``redraw_only`` just the task's fresh inputs (`redraw_inputs`)."""

    id: int
    kind: TrialKind
    case: Case
    seed: int
    label: str
    base: int | None = None
    perturb_seed: int = 0
    prefill: Prefill = "nan"
    redraw_only: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "case": self.case.to_json(), "seed": self.seed,
                "label": self.label, "base": self.base, "perturb_seed": self.perturb_seed, "prefill": self.prefill,
                "redraw_only": self.redraw_only}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Trial:
        prefill = d.get("prefill", "nan")
        if prefill not in PREFILLS:
            raise ValueError(f"trial prefill {prefill!r} is not one of {PREFILLS}")
        return Trial(int(d["id"]), d["kind"], Case.from_json(d["case"]), int(d["seed"]), str(d["label"]),
                     d.get("base"), int(d.get("perturb_seed", 0)), prefill, bool(d.get("redraw_only", False)))


@dataclass(frozen=True)
class TimedCase:
    """A bench case timed on rotated input sets. Before call i (warm-up calls first) the task's fresh inputs
    (`TaskSpec.fresh_inputs`) of the set in use are redrawn in place from ``call_seeds[i]``, so no two calls see
    the same inputs; ``captures`` are the secret (rep, set) pairs whose outputs are re-checked against references
    computed by the verifier."""

    case: Case
    seeds: tuple[int, ...]
    captures: tuple[tuple[int, int], ...]
    call_seeds: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case.to_json(), "seeds": list(self.seeds), "captures": [list(c) for c in self.captures],
                "call_seeds": list(self.call_seeds)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TimedCase:
        return TimedCase(Case.from_json(d["case"]), tuple(int(s) for s in d["seeds"]),
                         tuple((int(r), int(s)) for r, s in d["captures"]),
                         tuple(int(s) for s in d.get("call_seeds", ())))


@dataclass(frozen=True)
class TimingPlan:
    """Fixed repetition rules: `warmup` untimed calls, then `reps` timed calls per case (never adapted)."""

    cases: tuple[TimedCase, ...]
    warmup: int
    reps: int

    def to_json(self) -> dict[str, Any]:
        return {"cases": [c.to_json() for c in self.cases], "warmup": self.warmup, "reps": self.reps}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TimingPlan:
        return TimingPlan(tuple(TimedCase.from_json(c) for c in d["cases"]), int(d["warmup"]), int(d["reps"]))


@dataclass(frozen=True)
class Plan:
    """Everything the child runs, in order."""

    task: str
    device: str
    trials: tuple[Trial, ...]
    timing: TimingPlan | None

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "device": self.device, "trials": [t.to_json() for t in self.trials],
                "timing": self.timing.to_json() if self.timing else None}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Plan:
        timing = TimingPlan.from_json(d["timing"]) if d.get("timing") else None
        return Plan(d["task"], d["device"], tuple(Trial.from_json(t) for t in d["trials"]), timing)


@dataclass(frozen=True)
class PlanSettings:
    """Which trials to draw (see `VerifyOptions` for the meaning of each field)."""

    include_test_cases: bool
    include_bench_cases: bool
    random_cases: int
    small: bool
    timing: bool
    warmup: int = 3
    reps: int = 20
    rotations: int = 2
    case_ids: tuple[str, ...] = ()


def secret_rng() -> random.Random:
    """A generator seeded from ``os.urandom``: seeds no one wrote down and the candidate cannot predict."""
    return random.Random(int.from_bytes(os.urandom(16), "little"))


def _seed(rng: random.Random) -> int:
    return rng.randrange(1, 1 << 62)


def dtype_case(task: TaskSpec, rng: random.Random, dtype: str, small: bool) -> Case:
    """A hidden case in input dtype `dtype`: the task's own (`TaskSpec.dtype_case`), else an interpreter-sized
    random case with ``params["dtype"]`` replaced."""
    if task.dtype_case is not None:
        return task.dtype_case(rng, dtype, small)
    base = task.random_case(rng, True)
    return Case(f"{dtype}-inputs-{base.id}", {**dict(base.params), "dtype": dtype}, base.seed, "dtype")


def _selected(cases: tuple[Case, ...], ids: tuple[str, ...]) -> list[Case]:
    return [c for c in cases if not ids or c.id in ids]


def _check_case_ids(task: TaskSpec, ids: tuple[str, ...]) -> None:
    known = [c.id for c in task.bench_cases] + [c.id for c in task.test_cases]
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise BadInputError(f"case ids: {', '.join(unknown)} not a bench or test case of {task.name} "
                            f"(known: {', '.join(known)})")


def build_plan(task: TaskSpec, device: str, settings: PlanSettings, rng: random.Random | None = None) -> Plan:
    """Trials in the order the child runs them: a hidden random case, its in-place perturbation and then (tasks
    with `TaskSpec.fresh_inputs`) an in-place redraw of only the fresh inputs -- the other inputs (GEMM's weights)
    kept, as the timing loop does between calls, so an output replayed on a key of the kept inputs fails --, the
    task's hidden
    cases (`TaskSpec.hidden_cases`; extend attention: large logits, a long prefix, a long extend), the bench and/or
    test cases, a hidden case in each of `REQUIRED_DTYPES` (`dtype_case`; on a GPU only if no trial so far uses
    it: there bench and random cases are bfloat16), more hidden random cases (one repeated with a new seed), the
    kernel ablation; then the timing plan: the bench cases (the selected test cases when no bench case is checked
    -- a CPU protocol test); rotation set 0 reuses the case's trial seed.

    Raises:
        BadInputError: `settings.case_ids` names a case that is neither a bench nor a test case of `task`.
    """
    _check_case_ids(task, settings.case_ids)
    rng = rng or secret_rng()
    trials: list[Trial] = []

    def add(kind: TrialKind, case: Case, label: str, **extra: Any) -> Trial:
        trial = Trial(len(trials), kind, case, _seed(rng), label, **extra)
        trials.append(trial)
        return trial

    first = add("check", task.random_case(rng, settings.small), "hidden random shape")
    perturbed = add("perturb", first.case, "same buffers, perturbed values", base=first.id, perturb_seed=_seed(rng))
    if task.fresh_inputs:  # the timing loop's redraw, checked on the CPU too: a replay keyed on the other inputs
        add("perturb", first.case, f"same buffers, fresh {', '.join(task.fresh_inputs)} only", base=perturbed.id,
            perturb_seed=_seed(rng), redraw_only=True)
    for label, case in task.hidden_cases(rng, settings.small):
        add("check", case, label)
    bench_seed: dict[str, int] = {}
    if settings.include_bench_cases:
        for case in _selected(task.bench_cases, settings.case_ids):
            bench_seed[case.id] = add("check", case, "bench case").seed
    if settings.include_test_cases:
        for case in _selected(task.test_cases, settings.case_ids):
            add("check", case, "test case")
    for dtype in REQUIRED_DTYPES:
        if settings.small or all(task.dtype_of(t.case) != dtype for t in trials):
            add("check", dtype_case(task, rng, dtype, settings.small), f"{dtype} inputs")
    for i in range(max(0, settings.random_cases - 1)):
        extra = add("check", task.random_case(rng, settings.small), "hidden random shape")
        if i == 0:
            add("check", extra.case, "repeat with a new seed")
    add("ablate", task.random_case(rng, True), "every Triton launch disabled")
    trials = _draw_prefills(trials, rng)
    timing = None
    checked = {t.case.id: t.seed for t in trials if t.label in ("bench case", "test case")}
    if settings.timing and checked:
        pool = task.bench_cases if bench_seed else task.test_cases
        timed = [_timed_case(case, checked[case.id], settings, rng)
                 for case in _selected(pool, settings.case_ids) if case.id in checked]
        timing = TimingPlan(tuple(timed), settings.warmup, settings.reps)
    return Plan(task.name, device, tuple(trials), timing)


def _draw_prefills(trials: list[Trial], rng: random.Random) -> list[Trial]:
    """`trials` with the prefill of each check trial labelled in `DRAWN_PREFILL_LABELS` drawn (NaN with
    probability 1/2, else zeros or noise), and, where there are at least two such trials, one "zeros" and one
    "noise" among them whatever the draw: every plan calls the candidate on finite prefills."""
    bases = {t.base for t in trials if t.base is not None}
    drawn = [i for i, t in enumerate(trials)
             if i > 0 and i not in bases and t.kind == "check" and t.label in DRAWN_PREFILL_LABELS]
    fills = {i: rng.choice(("nan", "nan", "zeros", "noise")) for i in drawn}
    if len(drawn) >= 2:
        zero_at, noise_at = rng.sample(drawn, 2)
        fills[zero_at], fills[noise_at] = "zeros", "noise"
    return [replace(t, prefill=fills[i]) if i in fills else t for i, t in enumerate(trials)]


def prefill_output(out: torch.Tensor, prefill: Prefill, seed: int) -> None:
    """Fill the output `out` in place as `prefill` says (`Prefill`); "noise" is standard normal from a generator
    seeded with `seed` on `out`'s device, rounded to `out`'s dtype."""
    if prefill == "nan":
        out.fill_(float("nan"))
    elif prefill == "zeros":
        out.zero_()
    else:
        gen = torch.Generator(device=out.device).manual_seed(seed ^ 0x0F111)
        out.copy_(torch.randn(out.shape, generator=gen, device=out.device, dtype=torch.float32))


#: Label prefix of the covering trials (`kernels.extend_attention.long_trials.covering_trials`), which `split_plan`
#: spreads over two children.
COVERING_LABEL = "long prefix and extend"


def split_plan(plan: Plan, children: int = 2) -> tuple[Plan, ...]:
    """The plan's trials split over `children` sandbox children that run at the same time (so that their Triton
    compilations overlap), each a `Plan` of its own trials in their original order, ids unchanged.

    The first child gets the trials of the cases the timing plan times (the bench cases; the test cases when no
    bench case is checked, as `build_plan` times them) and the whole timing plan. With 2, the second child gets
    every other trial (hidden shapes, the perturbation with its base trial, large logits, long prefix, long
    extend, test cases, the float32 case, the ablation) and no timing, except every second covering trial (labels
    starting with `COVERING_LABEL`, the costliest on the CPU: 0.3-1.7 s each for the baseline in the interpreter),
    which runs in the first child. With 3, those other trials are split once
    more at the first timed-case trial: the ones planned before it (hidden shape, perturbation, large logits, long
    prefix, long extend) in the second child, the ones after it (test cases when bench cases are timed, the float32
    case -- on the H200 its IEEE float32 dot is the slowest compile of a verification --, more hidden shapes, the
    ablation) in the third. With 4 or more, every second timed-case trial moves from the first child to a fourth
    (on the H200 the bench cases' compilations were the longest child, 12 s of a 28 s verification): the first
    child's timing then finds those kernels in the sandbox's shared Triton cache, compiled by the fourth child,
    which has exited before timing starts. A split that would leave a child empty is not made (fewer children);
    one plan (the whole plan) when `children` is 1 or nothing can be split.

    Raises:
        ValueError: a perturbation trial would run in another child than its base trial.
    """
    if children < 2:
        return (plan,)
    labels = {t.label for t in plan.trials}
    first = "bench case" if "bench case" in labels else "test case"
    timed = tuple(t for t in plan.trials if t.label == first)
    rest = tuple(t for t in plan.trials if t.label != first)
    if not timed or not rest:
        return (plan,)
    groups = [timed, rest]
    if children == 2:  # every second covering trial joins the timed cases (the CPU: the other child is the long pole)
        spread = [t for t in rest if t.label.startswith(COVERING_LABEL)][1::2]
        groups = [tuple(sorted((*timed, *spread), key=lambda t: t.id)), tuple(t for t in rest if t not in spread)]
    if children >= 3:
        before = tuple(t for t in rest if t.id < timed[0].id)
        after = tuple(t for t in rest if t.id > timed[0].id)
        if before and after:
            groups = [timed, before, after]
    if children >= 4 and len(groups) == 3 and len(timed) >= 2:
        groups = [timed[0::2], *groups[1:], timed[1::2]]
    where = {t.id: i for i, group in enumerate(groups) for t in group}
    if any(where[t.base] != where[t.id] for t in plan.trials if t.base is not None):
        raise ValueError("a perturbation trial must run in the same child as its base trial")
    return tuple(Plan(plan.task, plan.device, group, plan.timing if i == 0 else None)
                 for i, group in enumerate(groups))


def _timed_case(case: Case, first_seed: int, settings: PlanSettings, rng: random.Random) -> TimedCase:
    seeds = (first_seed, *(_seed(rng) for _ in range(settings.rotations - 1)))
    captures: set[tuple[int, int]] = set()
    for s in range(len(seeds)):
        reps_of_set = [r for r in range(settings.reps) if r % len(seeds) == s]
        # two calls per set at random (none fixed, e.g. the last): a kernel that counts its calls cannot know which
        # of its outputs will be re-checked
        for rep in rng.sample(reps_of_set, min(2, len(reps_of_set))):
            captures.add((rep, s))
    call_seeds = tuple(_seed(rng) for _ in range(settings.warmup + settings.reps))
    return TimedCase(case, seeds, tuple(sorted(captures)), call_seeds)


def make_trial_inputs(task: TaskSpec, case: Case, seed: int, device: str | torch.device) -> dict[str, Any]:
    """`TaskSpec.make_inputs` for one trial, in the case's own dtype."""
    return task.make_inputs(case, seed, device, case.params.get("dtype"))


def fresh_values(task: TaskSpec, inputs: Mapping[str, Any], seed: int) -> dict[str, torch.Tensor]:
    """Fresh standard-normal values of the task's `TaskSpec.fresh_inputs`, ``{name: tensor}`` shaped and typed like
    ``inputs[name]``: one generator seeded with `seed` on the inputs' device draws them in the order named, so the
    values are deterministic in `seed` on a given device type (the parent and the child draw the same)."""
    out: dict[str, torch.Tensor] = {}
    gen = None
    for name in task.fresh_inputs:
        like = inputs[name]
        if gen is None:
            gen = torch.Generator(device=like.device).manual_seed(seed)
        out[name] = torch.randn(like.shape, generator=gen, device=like.device, dtype=torch.float32).to(like.dtype)
    return out


def redraw_inputs(task: TaskSpec, inputs: dict[str, Any], seed: int) -> None:
    """Copy `fresh_values` into the task's fresh inputs in place (same storages, same pointers)."""
    for name, values in fresh_values(task, inputs, seed).items():
        inputs[name].copy_(values)


def apply_perturbation(task: TaskSpec, inputs: dict[str, Any], trial: Trial) -> None:
    """Edit a perturbation trial's inputs in place: `redraw_inputs` with ``trial.redraw_only``, else
    `perturb_inputs`, from ``trial.perturb_seed``."""
    if trial.redraw_only:
        redraw_inputs(task, inputs, trial.perturb_seed)
    else:
        perturb_inputs(task, inputs, trial.perturb_seed)


def perturb_inputs(task: TaskSpec, inputs: dict[str, Any], seed: int) -> None:
    """Edit inputs in place (same storages, same pointers): the task's fresh inputs redrawn (`redraw_inputs`) and its
    `TaskSpec.negated_inputs` negated (each storage once: a name whose storage an earlier one negated is skipped).

    Deterministic in `seed` on a given device type; the parent applies it to its own copy. A candidate that
    replays an output cached on pointers or shapes keeps the old answer and fails.
    """
    redraw_inputs(task, inputs, seed)
    negated: set[int] = set()
    for name in task.negated_inputs:
        tensor = inputs[name]
        storage = tensor.untyped_storage().data_ptr()
        if storage not in negated:
            tensor.neg_()
            negated.add(storage)


_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def tensor_digest(t: torch.Tensor) -> str:
    """Bit-exact checksum of a tensor's elements (NaN payloads included), equal on CPU and CUDA.

    Two int64 sums with wrap-around (order-independent, so identical on every device): plain and weighted by
    position modulo 65521 (the largest prime below 2^16; catches permutations).
    """
    flat = t.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    bits = flat.contiguous().view(_INT_VIEW[flat.element_size()])
    plain = weighted = 0
    for start in range(0, bits.numel(), _DIGEST_CHUNK):  # chunks: a 5 GiB KV buffer needs no 3x int64 copy
        chunk = bits[start:start + _DIGEST_CHUNK].to(torch.int64)
        weights = torch.arange(start, start + chunk.numel(), device=chunk.device, dtype=torch.int64) % 65521 + 1
        plain += int(chunk.sum().item())
        weighted += int((chunk * weights).sum().item())
    plain, weighted = _wrap64(plain), _wrap64(weighted)
    return f"{list(t.shape)}:{t.dtype}:{plain:x}:{weighted:x}"


_DIGEST_CHUNK = 1 << 26


def _wrap64(value: int) -> int:
    """`value` wrapped to a signed 64-bit integer, as one int64 sum over the whole tensor would give."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def input_digest(inputs: Mapping[str, Any], skip: tuple[str, ...] = ()) -> str:
    """Digest of every input (tensors bit-exact, other values by repr), skipping the names in `skip`."""
    parts = []
    for name in sorted(inputs):
        if name in skip:
            continue
        value = inputs[name]
        parts.append(f"{name}={tensor_digest(value) if isinstance(value, torch.Tensor) else repr(value)}")
    return ";".join(parts)


