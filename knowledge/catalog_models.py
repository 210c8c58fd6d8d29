"""Entry models of the pattern catalog (`knowledge.catalog` loads them): the merged `Catalog` and its parts."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import BadInputError
from knowledge.formula import parse


class CatalogError(BadInputError):
    """The pattern catalog is malformed; the message names the file, the entry and the problem."""


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceRef(_Entry):
    """A named reference (paper, documentation page, public result)."""

    id: str
    title: str
    reference: str = ""

    def cite(self) -> str:
        return f"{self.title} ({self.reference})" if self.reference else self.title


class Bottleneck(_Entry):
    """A bottleneck class; `signal` is a formula over generic variables that is true when a case shows it (a task
    may give its own signal: `Catalog.signal`)."""

    id: str
    name: str
    description: str
    signal: str | None = None
    sources: tuple[str, ...] = ()


class HardwareFeature(_Entry):
    """A chip feature patterns depend on, with the profile fields that describe it."""

    id: str
    name: str
    profile_fields: tuple[str, ...]
    description: str = ""


class RuleOutput(_Entry):
    """One named value a parameter rule computes."""

    name: str
    formula: str
    unit: str = ""
    description: str = ""


class ParameterRule(_Entry):
    """Named formulas over the profile and the case of one task, evaluated in order (later outputs may use
    earlier ones). Rule ids are unique within a task."""

    id: str
    task: str
    description: str
    outputs: tuple[RuleOutput, ...]
    sources: tuple[str, ...] = ()


class Precondition(_Entry):
    """``requires``: the pattern does not apply when false. ``favors``: reported, the pattern still applies."""

    kind: Literal["requires", "favors"]
    formula: str
    text: str


class PatternDef(_Entry):
    """A pattern as an idea (the generic catalog, or a task's own pattern); `tasks` lists the tasks applying it."""

    id: str
    name: str
    description: str
    addresses: tuple[str, ...]
    requires_features: tuple[str, ...] = ()
    composes_with: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    purpose: Literal["speed", "correctness"] = "speed"
    tasks: tuple[str, ...] = ()


class PatternUse(_Entry):
    """How one task applies a pattern (its catalog file)."""

    pattern: str
    task: str
    description: str = ""
    preconditions: tuple[Precondition, ...] = ()
    rules: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    knobs: dict[str, str] = Field(default_factory=dict)
    prior_gain: str | None = None
    family_default: bool = False
    family_support: bool = True
    composes_with: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


class Pattern(_Entry):
    """A pattern flattened for one task: its definition plus the task's use (`Catalog.patterns_for`)."""

    id: str
    name: str
    tasks: tuple[str, ...]
    description: str
    addresses: tuple[str, ...]
    preconditions: tuple[Precondition, ...] = ()
    rules: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    knobs: dict[str, str] = Field(default_factory=dict)
    prior_gain: str | None = None
    purpose: Literal["speed", "correctness"] = "speed"
    family_default: bool = False
    family_support: bool = True
    requires_features: tuple[str, ...] = ()
    composes_with: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


class ExampleStep(_Entry):
    patterns: tuple[str, ...]
    parameters: dict[str, Any] = Field(default_factory=dict)


class Example(_Entry):
    """A published result used as evidence (ordered accepted steps and their total speedup)."""

    id: str
    title: str
    chip: str
    chip_features: dict[str, float | None] = Field(default_factory=dict)
    task: str
    case_class: str | None = None
    total_speedup: float = Field(gt=0)
    evaluations: int | None = None
    hours: float | None = None
    apportioning: Literal["harmonic", "equal"] = "harmonic"
    steps: tuple[ExampleStep, ...]
    sources: tuple[str, ...] = ()

    def step_log_gains(self) -> list[float]:
        """ln(total_speedup) apportioned over the steps (harmonic: step k gets 1/k of the weight)."""
        n = len(self.steps)
        weights = [1.0 / (k + 1) for k in range(n)] if self.apportioning == "harmonic" else [1.0] * n
        total = math.log(self.total_speedup)
        return [total * w / sum(weights) for w in weights]


class Scoring(_Entry):
    """Weights of the ranking (documented in the catalog file)."""

    prior_weight: float = Field(gt=0)
    case_affinity: dict[str, float]
    kind_weight: dict[str, float]
    similarity_features: tuple[str, ...]
    unknown_feature_similarity: float = Field(ge=0, le=1)
    off_diagnosis_factor: float = Field(ge=0, le=1)


class Catalog(_Entry):
    """The merged catalog, checked. `sha256` identifies the content of every file (the graph rebuilds when it
    changes); `path` is the generic file, `task_paths` the task files."""

    format_version: int
    scoring: Scoring
    sources: tuple[SourceRef, ...]
    bottlenecks: tuple[Bottleneck, ...]
    hardware_features: tuple[HardwareFeature, ...]
    patterns: tuple[PatternDef, ...]
    uses: tuple[PatternUse, ...] = ()
    parameter_rules: tuple[ParameterRule, ...] = ()
    examples: tuple[Example, ...] = ()
    signals: dict[str, dict[str, str]] = Field(default_factory=dict)
    sha256: str = ""
    path: str = ""
    task_paths: dict[str, str] = Field(default_factory=dict)

    @property
    def tasks(self) -> list[str]:
        """Tasks with a catalog part, in load order."""
        return list(self.task_paths)

    def pattern(self, pattern_id: str, task: str | None = None) -> Any:
        """The definition of `pattern_id` (`PatternDef`), or with `task` the pattern flattened for that task.

        Raises:
            BadInputError: unknown id, or a pattern `task` does not apply; the message lists the known ones.
        """
        if task is not None:
            for p in self.patterns_for(task):
                if p.id == pattern_id:
                    return p
            known = ", ".join(p.id for p in self.patterns_for(task))
            raise BadInputError(f"pattern {pattern_id!r} does not apply to task {task!r}; known: {known}")
        for p in self.patterns:
            if p.id == pattern_id:
                return p
        raise BadInputError(f"unknown pattern {pattern_id!r}; known: {', '.join(p.id for p in self.patterns)}")

    def rule(self, rule_id: str, task: str) -> ParameterRule:
        return next(r for r in self.parameter_rules if r.id == rule_id and r.task == task)

    def source(self, source_id: str) -> SourceRef:
        return next(s for s in self.sources if s.id == source_id)

    def signal(self, bottleneck_id: str, task: str) -> str | None:
        """The signal formula of a bottleneck for `task`: the task's own, else the generic one (None: none)."""
        own = self.signals.get(task, {}).get(bottleneck_id)
        return own if own is not None else next(b.signal for b in self.bottlenecks if b.id == bottleneck_id)

    def patterns_for(self, task: str) -> list[Pattern]:
        """Patterns that apply to `task`, flattened for it, in catalog order."""
        uses = {u.pattern: u for u in self.uses if u.task == task}
        return [flatten(d, uses[d.id]) for d in self.patterns if d.id in uses]

    def rules_in_order(self, task: str) -> list[ParameterRule]:
        """Rules of `task` ordered so that every rule comes after the rules whose outputs it reads."""
        return rule_order([r for r in self.parameter_rules if r.task == task], task, self.path)


def _unique(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for g in groups for x in g))


def flatten(definition: PatternDef, use: PatternUse) -> Pattern:
    """`definition` applied as `use` says (description: the task's if it gives one; sources and composition:
    both)."""
    return Pattern(
        id=definition.id, name=definition.name, tasks=(use.task,),
        description=use.description or definition.description, addresses=definition.addresses,
        preconditions=use.preconditions, rules=use.rules, parameters=use.parameters, knobs=dict(use.knobs),
        prior_gain=use.prior_gain, purpose=definition.purpose, family_default=use.family_default,
        family_support=use.family_support, requires_features=definition.requires_features,
        composes_with=_unique(definition.composes_with, use.composes_with),
        conflicts_with=_unique(definition.conflicts_with, use.conflicts_with),
        sources=_unique(definition.sources, use.sources))


def rule_order(rules: list[ParameterRule], task: str, path: str) -> list[ParameterRule]:
    """Topological order of `rules` by the outputs each reads (stable: catalog order among independent rules)."""
    producer = {o.name: r.id for r in rules for o in r.outputs}
    deps = {r.id: {producer[n] for o in r.outputs for n in parse(o.formula).names if producer.get(n, r.id) != r.id}
            for r in rules}
    done: list[ParameterRule] = []
    placed: set[str] = set()
    while len(done) < len(rules):
        ready = [r for r in rules if r.id not in placed and deps[r.id] <= placed]
        if not ready:
            stuck = sorted(set(deps) - placed)
            raise CatalogError(f"pattern catalog {path}: rules {stuck} of task {task!r} depend on each other "
                               "in a cycle")
        done.append(ready[0])
        placed.add(ready[0].id)
    return done
