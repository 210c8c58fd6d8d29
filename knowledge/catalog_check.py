"""Checks of a merged pattern catalog: every cross-reference resolves and every formula parses and names only known
variables (knowledge.variables, the task's `FormulaVariables`, outputs of the task's rules) and functions."""

from __future__ import annotations

from collections.abc import Callable

from hardware_profiles.schema import PROFILE_FIELDS
from kernels.task import load_task
from knowledge.catalog_models import Catalog, CatalogError, ParameterRule, Pattern
from knowledge.formula import Formula, FormulaError, check_functions, parse
from knowledge.variables import (
    COMMON_CASE_VARIABLES,
    DIAGNOSIS_VARIABLES,
    PROFILE_VARIABLES,
    function_names,
    known_variables,
)

#: Variables every task has: what the generic catalog's formulas may read.
GENERIC_VARIABLES = set(PROFILE_VARIABLES) | set(COMMON_CASE_VARIABLES) | set(DIAGNOSIS_VARIABLES)

Refs = Callable[[str, str, "tuple[str, ...] | list[str]"], None]


def check_catalog(cat: Catalog) -> None:
    """Raise `CatalogError` naming the file, the entry and the problem at the first inconsistency of `cat`."""
    where = f"pattern catalog {cat.path}"
    ids = {
        "source": [s.id for s in cat.sources], "bottleneck": [b.id for b in cat.bottlenecks],
        "feature": [f.id for f in cat.hardware_features], "pattern": [p.id for p in cat.patterns],
    }
    for kind, seen in ids.items():
        if len(set(seen)) != len(seen):
            dup = sorted({x for x in seen if seen.count(x) > 1})
            raise CatalogError(f"{where}: duplicate {kind} id(s) {dup}")
    known = {kind: set(seen) for kind, seen in ids.items()}

    def refs(owner: str, kind: str, values: tuple[str, ...] | list[str]) -> None:
        bad = [v for v in values if v not in known[kind]]
        if bad:
            raise CatalogError(f"{where}: {owner}: unknown {kind} id(s) {bad}; known: {sorted(known[kind])}")

    for b in cat.bottlenecks:
        refs(f"bottleneck {b.id!r}", "source", b.sources)
        if b.signal:  # the generic part holds for every task: generic variables only
            unknown = sorted(parse(b.signal).names - GENERIC_VARIABLES)
            if unknown:
                raise CatalogError(f"{where}: bottleneck {b.id!r} signal: formula {b.signal!r} references "
                                   f"{unknown[0]!r}, which not every task has (a task gives its own signal)")
    for f in cat.hardware_features:
        bad = [x for x in f.profile_fields if x not in PROFILE_VARIABLES]
        if bad:
            raise CatalogError(f"{where}: hardware feature {f.id!r}: unknown profile field(s) {bad}")
    for p in cat.patterns:
        refs(f"pattern {p.id!r}", "bottleneck", p.addresses)
        refs(f"pattern {p.id!r}", "feature", p.requires_features)
    for task in cat.tasks:
        _check_task(cat, task, refs, f"pattern catalog {cat.task_paths[task]}")
    for ex in cat.examples:
        refs(f"example {ex.id!r}", "source", ex.sources)
        for step in ex.steps:
            refs(f"example {ex.id!r}", "pattern", step.patterns)


def _check_task(cat: Catalog, task: str, refs: Refs, where: str) -> None:
    rules = [r for r in cat.parameter_rules if r.task == task]
    if len({r.id for r in rules}) != len(rules):
        raise CatalogError(f"{where}: duplicate rule id")
    outputs = _rule_outputs(rules, where)
    for rule in rules:
        refs(f"rule {rule.id!r}", "source", rule.sources)
        users = [u.pattern for u in cat.uses if u.task == task and rule.id in u.rules]
        for out in rule.outputs:
            owner = (f"pattern {users[0]!r} (rule {rule.id!r}, {out.name})" if users
                     else f"rule {rule.id!r} ({out.name})")
            check_formula(out.formula, owner, task, outputs, where)
    cat.rules_in_order(task)  # raises on cycles
    for b in cat.bottlenecks:
        signal = cat.signal(b.id, task)
        if signal:
            check_formula(signal, f"bottleneck {b.id!r} signal", task, outputs, where)
    unknown_signals = sorted(set(cat.signals.get(task, {})) - {b.id for b in cat.bottlenecks})
    if unknown_signals:
        raise CatalogError(f"{where}: signals: unknown bottleneck id(s) {unknown_signals}")
    knobs = set(load_task(task).knobs)
    for p in cat.patterns_for(task):
        _check_pattern(cat, p, task, refs, outputs, knobs, where)


def _check_pattern(cat: Catalog, p: Pattern, task: str, refs: Refs, outputs: set[str], knobs: set[str],
                   where: str) -> None:
    owner = f"pattern {p.id!r}"
    rule_ids = {r.id for r in cat.parameter_rules if r.task == task}
    bad = [r for r in p.rules if r not in rule_ids]
    if bad:
        raise CatalogError(f"{where}: {owner}: unknown rule id(s) {bad} of task {task!r}; known: {sorted(rule_ids)}")
    refs(owner, "pattern", list(p.composes_with) + list(p.conflicts_with))
    refs(owner, "source", p.sources)
    if not p.addresses:
        raise CatalogError(f"{where}: {owner}: addresses no bottleneck")
    if not p.sources:
        raise CatalogError(f"{where}: {owner}: cites no source")
    visible = {o.name for r in _rule_closure(cat, p.rules, task) for o in r.outputs}
    for name in p.parameters:
        if name not in visible:
            own = sorted(o.name for r in p.rules for o in cat.rule(r, task).outputs)
            raise CatalogError(f"{where}: {owner}: parameter {name!r} is not an output of its rules "
                               f"{list(p.rules)} (outputs: {own})")
    formulas = [(pc.formula, f"precondition {pc.text!r}") for pc in p.preconditions]
    formulas += [(f, f"knob {k!r}") for k, f in p.knobs.items()]
    if p.prior_gain:
        formulas.append((p.prior_gain, "prior_gain"))
    for text, what in formulas:
        check_formula(text, f"{owner} ({what})", task, outputs, where)
    unknown_knobs = sorted(set(p.knobs) - knobs)
    if unknown_knobs:
        raise CatalogError(f"{where}: {owner}: unknown knob(s) {unknown_knobs} of task {task!r}; the family's knobs: "
                           f"{sorted(knobs)}")


def check_formula(text: str, owner: str, task: str, rule_outputs: set[str], where: str) -> Formula:
    """Parse `text` and check its functions and names for `task`.

    Raises:
        CatalogError: the formula does not parse, calls an unknown function or names an unknown variable.
    """
    try:
        formula = parse(text)
        check_functions(formula, function_names(task))
    except FormulaError as exc:
        raise CatalogError(f"{where}: {owner}: {exc}") from None
    unknown = sorted(formula.names - (set(known_variables(task)) | rule_outputs))
    if unknown:
        raise CatalogError(f"{where}: {owner}: formula {text!r} references unknown field {unknown[0]!r} "
                           f"(profile fields: {', '.join(PROFILE_FIELDS)})")
    return formula


def _rule_outputs(rules: list[ParameterRule], where: str) -> set[str]:
    names: set[str] = set()
    for rule in rules:
        for out in rule.outputs:
            if out.name in names:
                raise CatalogError(f"{where}: rule {rule.id!r}: output {out.name!r} is defined twice")
            names.add(out.name)
    return names


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
