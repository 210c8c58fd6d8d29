"""The pattern catalog: a packaged YAML file (`pattern_catalog.yaml`) parsed into typed, checked entries.

Loading checks every cross-reference and every formula: a formula that names something that is neither a profile
field, a case or diagnosis variable, nor an output of a parameter rule fails with the pattern (or rule) and the
name, e.g. ``pattern 'split_kv' (rule 'split', slots): unknown field 'num_compute_unitz'``. Knob names must be
knobs of the task's kernel family (`TaskSpec.knobs`).

Public API: `load_catalog(path=None) -> Catalog`, `CatalogError`, and the entry models.
"""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import BadInputError
from knowledge.formula import Formula, FormulaError, UnknownValue, check_functions, parse
from knowledge.variables import TASK_FUNCTIONS, known_variables

CATALOG_PATH = Path(__file__).with_name("pattern_catalog.yaml")
CATALOG_FORMAT_VERSION = 1


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
    """A bottleneck class; `signal` is a formula that is true when the case shows it."""

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
    """Named formulas over the profile and the case, evaluated in order (later outputs may use earlier ones)."""

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


class Pattern(_Entry):
    """An optimization pattern (see the catalog header for the fields)."""

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
    """The whole catalog, checked. `sha256` identifies the file content (the graph rebuilds when it changes)."""

    format_version: int
    scoring: Scoring
    sources: tuple[SourceRef, ...]
    bottlenecks: tuple[Bottleneck, ...]
    hardware_features: tuple[HardwareFeature, ...]
    parameter_rules: tuple[ParameterRule, ...]
    patterns: tuple[Pattern, ...]
    examples: tuple[Example, ...] = ()
    sha256: str = ""
    path: str = ""

    def pattern(self, pattern_id: str) -> Pattern:
        """Pattern by id.

        Raises:
            BadInputError: unknown id; the message lists the known ones.
        """
        for p in self.patterns:
            if p.id == pattern_id:
                return p
        raise BadInputError(f"unknown pattern {pattern_id!r}; known: {', '.join(p.id for p in self.patterns)}")

    def rule(self, rule_id: str) -> ParameterRule:
        return next(r for r in self.parameter_rules if r.id == rule_id)

    def source(self, source_id: str) -> SourceRef:
        return next(s for s in self.sources if s.id == source_id)

    def patterns_for(self, task: str) -> list[Pattern]:
        """Patterns that apply to `task`, in catalog order."""
        return [p for p in self.patterns if task in p.tasks]

    def rules_in_order(self, task: str) -> list[ParameterRule]:
        """Rules of `task` ordered so that every rule comes after the rules whose outputs it reads."""
        return _rule_order([r for r in self.parameter_rules if r.task == task], task, self.path)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load and check the catalog at `path` (default: the packaged `pattern_catalog.yaml`).

    Raises:
        CatalogError: unreadable file, YAML error, wrong format version, a missing or extra key, a dangling
            reference (bottleneck, feature, rule, pattern, source id), an unknown knob, or a formula that does not
            parse or names an unknown field (the message names the pattern or rule and the field).
    """
    p = Path(path) if path is not None else CATALOG_PATH
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise CatalogError(f"pattern catalog {p}: cannot read ({exc.strerror or exc})") from None
    return _load_cached(str(p), hashlib.sha256(raw).hexdigest(), raw)


@lru_cache(maxsize=8)
def _load_cached(path: str, sha: str, raw: bytes) -> Catalog:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise CatalogError(f"pattern catalog {path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"pattern catalog {path}: expected a mapping at the top level")
    version = data.get("format_version")
    if version != CATALOG_FORMAT_VERSION:
        raise CatalogError(f"pattern catalog {path}: format_version {version!r}, this chiplore reads "
                           f"{CATALOG_FORMAT_VERSION}")
    try:
        catalog = Catalog(**data, sha256=sha, path=path)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise CatalogError(f"pattern catalog {path}: {where}: {err['msg']}") from None
    _check(catalog)
    return catalog


def _check(cat: Catalog) -> None:
    where = f"pattern catalog {cat.path}"
    ids = {
        "source": {s.id for s in cat.sources}, "bottleneck": {b.id for b in cat.bottlenecks},
        "feature": {f.id for f in cat.hardware_features}, "rule": {r.id for r in cat.parameter_rules},
        "pattern": {p.id for p in cat.patterns},
    }
    for kind, seen in ids.items():
        count = {"source": cat.sources, "bottleneck": cat.bottlenecks, "feature": cat.hardware_features,
                 "rule": cat.parameter_rules, "pattern": cat.patterns}[kind]
        if len(seen) != len(count):
            raise CatalogError(f"{where}: duplicate {kind} id")

    def refs(owner: str, kind: str, values: tuple[str, ...] | list[str]) -> None:
        bad = [v for v in values if v not in ids[kind]]
        if bad:
            raise CatalogError(f"{where}: {owner}: unknown {kind} id(s) {bad}; known: {sorted(ids[kind])}")

    tasks = {r.task for r in cat.parameter_rules} | {t for p in cat.patterns for t in p.tasks}
    outputs = {task: _rule_outputs(cat, task, where) for task in tasks}
    for rule in cat.parameter_rules:
        refs(f"rule {rule.id!r}", "source", rule.sources)
        for out in rule.outputs:
            users = [p.id for p in cat.patterns if rule.id in p.rules]
            owner = f"pattern {users[0]!r} (rule {rule.id!r}, {out.name})" if users else \
                f"rule {rule.id!r} ({out.name})"
            _check_formula(out.formula, owner, rule.task, outputs[rule.task], where)
        cat.rules_in_order(rule.task)  # raises on cycles
    for b in cat.bottlenecks:
        refs(f"bottleneck {b.id!r}", "source", b.sources)
        for task in tasks:
            if b.signal:
                _check_formula(b.signal, f"bottleneck {b.id!r} signal", task, outputs[task], where)
    for f in cat.hardware_features:
        from knowledge.variables import PROFILE_VARIABLES

        bad = [x for x in f.profile_fields if x not in PROFILE_VARIABLES]
        if bad:
            raise CatalogError(f"{where}: hardware feature {f.id!r}: unknown profile field(s) {bad}")
    for p in cat.patterns:
        _check_pattern(cat, p, refs, outputs, where)
    for ex in cat.examples:
        refs(f"example {ex.id!r}", "source", ex.sources)
        for step in ex.steps:
            refs(f"example {ex.id!r}", "pattern", step.patterns)


def _check_pattern(cat: Catalog, p: Pattern, refs: Any, outputs: dict[str, set[str]], where: str) -> None:
    owner = f"pattern {p.id!r}"
    refs(owner, "bottleneck", p.addresses)
    refs(owner, "rule", p.rules)
    refs(owner, "feature", p.requires_features)
    refs(owner, "pattern", list(p.composes_with) + list(p.conflicts_with))
    refs(owner, "source", p.sources)
    if not p.addresses:
        raise CatalogError(f"{where}: {owner}: addresses no bottleneck")
    if not p.sources:
        raise CatalogError(f"{where}: {owner}: cites no source")
    for task in p.tasks:
        own = {o.name for r in p.rules for o in cat.rule(r).outputs if cat.rule(r).task == task}
        visible = {o.name for r in _rule_closure(cat, p.rules, task) for o in r.outputs}
        for name in p.parameters:
            if name not in visible:
                raise CatalogError(f"{where}: {owner}: parameter {name!r} is not an output of its rules "
                                   f"{list(p.rules)} (outputs: {sorted(own)})")
        formulas = [(pc.formula, f"precondition {pc.text!r}") for pc in p.preconditions]
        formulas += [(f, f"knob {k!r}") for k, f in p.knobs.items()]
        if p.prior_gain:
            formulas.append((p.prior_gain, "prior_gain"))
        for text, what in formulas:
            _check_formula(text, f"{owner} ({what})", task, outputs[task], where)
        _check_knobs(p, task, where)


def _check_knobs(p: Pattern, task: str, where: str) -> None:
    try:
        from kernels.task import load_task

        knobs = set(load_task(task).knobs)
    except KeyError:
        raise CatalogError(f"{where}: pattern {p.id!r}: unknown task {task!r}") from None
    bad = sorted(set(p.knobs) - knobs)
    if bad:
        raise CatalogError(f"{where}: pattern {p.id!r}: unknown knob(s) {bad} of task {task!r}; "
                           f"the family's knobs: {sorted(knobs)}")


def _check_formula(text: str, owner: str, task: str, rule_outputs: set[str], where: str) -> Formula:
    try:
        formula = parse(text)
        check_functions(formula, set(TASK_FUNCTIONS.get(task, {})))
    except FormulaError as exc:
        raise CatalogError(f"{where}: {owner}: {exc}") from None
    try:
        known = set(known_variables(task)) | rule_outputs
    except KeyError as exc:
        raise CatalogError(f"{where}: {owner}: {exc.args[0]}") from None
    unknown = sorted(formula.names - known)
    if unknown:
        from hardware_profiles.schema import PROFILE_FIELDS

        raise CatalogError(f"{where}: {owner}: formula {text!r} references unknown field {unknown[0]!r} "
                           f"(profile fields: {', '.join(PROFILE_FIELDS)})")
    return formula


def _rule_outputs(cat: Catalog, task: str, where: str) -> set[str]:
    names: set[str] = set()
    for rule in (r for r in cat.parameter_rules if r.task == task):
        for out in rule.outputs:
            if out.name in names:
                raise CatalogError(f"{where}: rule {rule.id!r}: output {out.name!r} is defined twice")
            names.add(out.name)
    return names


def _rule_order(rules: list[ParameterRule], task: str, path: str) -> list[ParameterRule]:
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


def _rule_closure(cat: Catalog, rule_ids: tuple[str, ...], task: str) -> list[ParameterRule]:
    """`rule_ids` plus every rule they read from, in evaluation order."""
    ordered = cat.rules_in_order(task)
    producer = {o.name: r.id for r in ordered for o in r.outputs}
    need = set(rule_ids)
    changed = True
    while changed:
        changed = False
        for r in ordered:
            if r.id in need:
                for o in r.outputs:
                    for n in parse(o.formula).names:
                        if n in producer and producer[n] not in need:
                            need.add(producer[n])
                            changed = True
    return [r for r in ordered if r.id in need]


def evaluate_rules(cat: Catalog, task: str, env: dict[str, Any], functions: dict[str, Any]) -> \
        tuple[dict[str, Any], dict[str, str]]:
    """Evaluate every rule of `task` in order over `env` (profile + case + diagnosis variables).

    Returns:
        (values, unknown): `values` maps every rule output to its value (``None`` when unknown); `unknown` maps
        each unknown output to the reason (the null field it needed, or the arithmetic error).
    """
    values = dict(env)
    unknown: dict[str, str] = {}
    for rule in cat.rules_in_order(task):
        for out in rule.outputs:
            try:
                values[out.name] = parse(out.formula).evaluate(values, functions)
            except UnknownValue as exc:
                values[out.name] = None
                unknown[out.name] = unknown.get(exc.name, f"needs {exc.name} (unknown in the profile)")
            except FormulaError as exc:
                values[out.name] = None
                unknown[out.name] = str(exc)
    return values, unknown
