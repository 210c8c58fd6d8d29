"""The two kinds of catalog file and how they merge into one `Catalog` (knowledge.catalog documents the format).

- `GenericFile` (knowledge/pattern_catalog.yaml): scoring, sources, bottlenecks, hardware_features, patterns
  (definitions).
- `TaskFile` (kernels/<task>/catalog.yaml): task, sources, signals, parameter_rules, patterns (uses of generic
  patterns, or definitions of the task's own with a ``name``), examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from knowledge.catalog_models import (
    Bottleneck,
    Catalog,
    CatalogError,
    Example,
    ExampleStep,
    HardwareFeature,
    ParameterRule,
    PatternDef,
    PatternUse,
    Precondition,
    RuleOutput,
    Scoring,
    SourceRef,
    _Entry,
)


class GenericFile(_Entry):
    format_version: int
    scoring: Scoring
    sources: tuple[SourceRef, ...]
    bottlenecks: tuple[Bottleneck, ...]
    hardware_features: tuple[HardwareFeature, ...]
    patterns: tuple[PatternDef, ...]


class TaskRule(_Entry):
    id: str
    description: str
    outputs: tuple[RuleOutput, ...]
    sources: tuple[str, ...] = ()


class TaskPattern(_Entry):
    """A task file's pattern entry: a use of a generic pattern, or (with `name` and `addresses`) a pattern of the
    task alone."""

    id: str
    name: str | None = None
    description: str = ""
    addresses: tuple[str, ...] = ()
    requires_features: tuple[str, ...] = ()
    purpose: Literal["speed", "correctness"] | None = None
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

    def defines(self) -> bool:
        return self.name is not None


class TaskExample(_Entry):
    id: str
    title: str
    chip: str
    chip_features: dict[str, float | None] = Field(default_factory=dict)
    case_class: str | None = None
    total_speedup: float = Field(gt=0)
    evaluations: int | None = None
    hours: float | None = None
    apportioning: Literal["harmonic", "equal"] = "harmonic"
    steps: tuple[ExampleStep, ...]
    sources: tuple[str, ...] = ()


class TaskFile(_Entry):
    format_version: int
    task: str
    sources: tuple[SourceRef, ...] = ()
    signals: dict[str, str] = Field(default_factory=dict)
    parameter_rules: tuple[TaskRule, ...] = ()
    patterns: tuple[TaskPattern, ...] = ()
    examples: tuple[TaskExample, ...] = ()


_DEFINITION_ONLY = ("name", "addresses", "requires_features", "purpose")


def _definition(entry: TaskPattern, task: str, path: str) -> PatternDef:
    if not entry.addresses:
        raise CatalogError(f"pattern catalog {path}: pattern {entry.id!r}: a task's own pattern needs 'addresses'")
    return PatternDef(id=entry.id, name=entry.name or entry.id, description=entry.description,
                      addresses=entry.addresses, requires_features=entry.requires_features,
                      composes_with=entry.composes_with, conflicts_with=entry.conflicts_with, sources=entry.sources,
                      purpose=entry.purpose or "speed", tasks=(task,))


def _use(entry: TaskPattern, task: str, own: bool, path: str) -> PatternUse:
    if not own:
        given = [k for k in _DEFINITION_ONLY if k in entry.model_fields_set]
        if given:
            raise CatalogError(f"pattern catalog {path}: pattern {entry.id!r} is defined in the generic catalog; a "
                               f"task applies it without {', '.join(given)}")
    extra: dict[str, Any] = {} if own else {"description": entry.description, "composes_with": entry.composes_with,
                                            "conflicts_with": entry.conflicts_with, "sources": entry.sources}
    return PatternUse(pattern=entry.id, task=task, preconditions=entry.preconditions, rules=entry.rules,
                      parameters=entry.parameters, knobs=dict(entry.knobs), prior_gain=entry.prior_gain,
                      family_default=entry.family_default, family_support=entry.family_support, **extra)


def merge(generic: GenericFile, parts: Sequence[tuple[str, TaskFile]], path: str, sha: str) -> Catalog:
    """One `Catalog` from the generic file and the task files (`parts`: (file path, parsed file)).

    Raises:
        CatalogError: a source or pattern defined twice, a pattern used twice by one task, an unknown pattern id,
            or a definition field given for a generic pattern.
    """
    definitions = {d.id: d for d in generic.patterns}
    if len(definitions) != len(generic.patterns):
        raise CatalogError(f"pattern catalog {path}: duplicate pattern id")
    generic_ids = set(definitions)
    for part_path, part in parts:  # the tasks' own patterns first: another task may apply them too
        for entry in part.patterns:
            if entry.defines() and entry.id not in generic_ids:
                if entry.id in definitions:
                    raise CatalogError(f"pattern catalog {part_path}: pattern {entry.id!r} is defined twice")
                definitions[entry.id] = _definition(entry, part.task, part_path)
    uses, rules, examples, sources = [], [], [], list(generic.sources)
    for part_path, part in parts:
        seen = set()
        for entry in part.patterns:
            if entry.id not in definitions:
                raise CatalogError(f"pattern catalog {part_path}: pattern {entry.id!r}: unknown pattern id; give it "
                                   f"a name and addresses to define it, or use one of {sorted(definitions)}")
            if entry.id in seen:
                raise CatalogError(f"pattern catalog {part_path}: pattern {entry.id!r} appears twice")
            seen.add(entry.id)
            uses.append(_use(entry, part.task, entry.id not in generic_ids, part_path))
        rules += [ParameterRule(task=part.task, **r.model_dump()) for r in part.parameter_rules]
        examples += [Example(task=part.task, **e.model_dump()) for e in part.examples]
        sources += part.sources
    tasks_of: dict[str, list[str]] = {}
    for u in uses:
        tasks_of.setdefault(u.pattern, []).append(u.task)
    patterns = tuple(d.model_copy(update={"tasks": tuple(tasks_of.get(d.id, ()))}) for d in definitions.values())
    return Catalog(format_version=generic.format_version, scoring=generic.scoring, sources=tuple(sources),
                   bottlenecks=generic.bottlenecks, hardware_features=generic.hardware_features, patterns=patterns,
                   uses=tuple(uses), parameter_rules=tuple(rules), examples=tuple(examples),
                   signals={part.task: dict(part.signals) for _, part in parts}, sha256=sha, path=path,
                   task_paths={part.task: p for p, part in parts})
