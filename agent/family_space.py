"""A task's kernel family as the agent searches it: dispatch classes, knob configurations, candidate files.

A family candidate is a dispatch table ``{dispatch class: knob configuration}`` rendered from the task's candidate
template (`kernels.task.TaskFiles.candidate_template`) into a standalone file that imports the family module
(`kernels.task.KernelFamily.module`). The class of a call is computed inside the candidate from tensor metadata
only, with the same function the task's `KernelFamily.dispatch_class` uses on a case's features; the chip's ridge
point (`hardware_profiles.peaks.ridge_flop_per_byte`) is written into the file.

Every class of the run's cases has an entry (a run starts from the family's `structure_config`, the baseline
kernel's structure inside the family), so a candidate changes one class without touching the others; a class no
bench case has (e.g. a shape drawn at verification time) uses the family's default configuration. The candidate
imports nothing but the family module and keeps no mutable module state (the verifier's static rules).

Everything task-specific (features, classes, shared memory, fit, programs, the structure) comes from the task's
`KernelFamily`; this module only enumerates, snaps and steps knob values and renders.
The candidate carries the chip's limits (`KernelFamily.candidate_limits`, from the profile) as data where the family
needs them; a profile with an unknown limit cannot render one.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from agent.templates import render_file
from core.errors import BadInputError
from hardware_profiles.peaks import ridge_flop_per_byte
from hardware_profiles.schema import HardwareProfile
from kernels.chip import UnknownChipLimit
from kernels.task import Case, KernelFamily, TaskSpec

Config = dict[str, Any]
Table = dict[str, Config]


def config_key(config: Mapping[str, Any]) -> str:
    """Canonical JSON of a configuration (sorted keys): its identity for dedupe and statistics."""
    return json.dumps(dict(config), sort_keys=True)


def table_hash(table: Mapping[str, Mapping[str, Any]]) -> str:
    """sha256 (first 16 hex) of the canonical JSON of a dispatch table."""
    canonical = json.dumps({k: dict(v) for k, v in table.items()}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def source_hash(source: str) -> str:
    """sha256 (first 16 hex) of a candidate source with trailing whitespace of each line removed."""
    normalized = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(normalized.encode()).hexdigest()[:16]


class FamilySpace:
    """Knob configurations of the task's kernel family that fit the chip, grouped by dispatch class.

    Args:
        task: the task (its `knobs` define the space, its `family` the rest).
        profile: chip profile (ridge point and the chip limits: compute units, shared memory per block, warp
            width, threads per block).
        cases: the bench cases being optimized (they decide which classes matter).

    Raises:
        ValueError: the task defines no knobs, family or candidate template (not a family task).
        BadInputError: a chip limit is unknown in the profile (the message names the field and how to get it).
    """

    def __init__(self, task: TaskSpec, profile: HardwareProfile, cases: list[Case]) -> None:
        if not task.knobs or task.family is None or task.files is None:
            raise ValueError(f"task {task.name!r} has no kernel family (knobs, family and candidate template)")
        self.task = task
        self.family: KernelFamily = task.family
        self.profile = profile
        try:
            self.limits = self.family.candidate_limits(profile)
        except UnknownChipLimit as exc:
            raise BadInputError(str(exc)) from None
        self.knobs: dict[str, tuple[Any, ...]] = {k: tuple(v) for k, v in task.knobs.items()}
        ridge = ridge_flop_per_byte(profile, task.dtype_of(cases[0])) if cases else None
        self.ridge = None if ridge is None else round(ridge, 3)  # as written into the candidate file
        self.shapes = {c.id: self.family.features(c) for c in cases}
        self.classes: dict[str, list[str]] = {}
        for case in cases:
            self.classes.setdefault(self.class_of(case), []).append(case.id)

    # ----- classes
    def features(self, case: Case) -> Any:
        """The family's features of `case` (cached for the run's cases)."""
        return self.shapes.get(case.id) or self.family.features(case)

    def class_of(self, case: Case) -> str:
        """Dispatch class of a case, as the candidate computes it at run time."""
        return self.family.dispatch_class(self.features(case), self.ridge)

    def class_cases(self, key: str) -> list[str]:
        return list(self.classes.get(key, []))

    def _class_features(self, key: str) -> list[Any]:
        return [self.shapes[c] for c in self.classes.get(key) or list(self.shapes)]

    # ----- feasibility
    def smem_kb(self, config: Mapping[str, Any], key: str) -> float:
        """Shared memory of one program in KiB for the class's largest case, by the family's own formula."""
        return max(self.family.smem_kb(config, f) for f in self._class_features(key))

    def feasible(self, config: Mapping[str, Any], key: str) -> bool:
        """Every case of the class fits the chip with `config` as given (`KernelFamily.fits`)."""
        return all(self.family.fits(config, f, self.profile) for f in self._class_features(key))

    def refit(self, config: Mapping[str, Any], key: str) -> Config | None:
        """`config` fitted to this chip for every case of class `key` by the family's own rule
        (``KernelFamily.refit``, optional: a family without one cannot re-fit), completed to every knob and
        feasible; None when it cannot fit. A configuration measured on a chip with more shared memory or threads
        per block is adapted to this one's limits, not dropped.

        Raises:
            BadInputError: a chip limit is unknown in the profile.
        """
        refit = getattr(self.family, "refit", None)
        if refit is None:
            return dict(config) if self.feasible(config, key) else None
        try:
            fitted = refit(dict(config), self._class_features(key), self.profile)
        except UnknownChipLimit as exc:
            raise BadInputError(str(exc)) from None
        if fitted is None:
            return None
        fitted = self.complete(fitted)
        return fitted if self.feasible(fitted, key) else None

    def tuned_config(self, key: str) -> Config | None:
        """The task's tuned entry point's rule for class `key` as a configuration of the space
        (``KernelFamily.tuned_config``, optional: None for a family without one, or where it does not fit the
        chip), completed to every knob.

        Raises:
            BadInputError: a chip limit is unknown in the profile.
        """
        rule = getattr(self.family, "tuned_config", None)
        if rule is None:
            return None
        try:
            config = self.complete(rule(self._class_features(key), self.profile))
        except UnknownChipLimit as exc:
            raise BadInputError(str(exc)) from None
        if any(config[k] not in self.knobs[k] for k in self.knobs) or not self.feasible(config, key):
            return None
        return config

    def all_configs(self, key: str, fixed: Mapping[str, Any] | None = None) -> list[Config]:
        """Every feasible configuration of class `key` with the knobs named in `fixed` at those values, in
        knob-product order. The whole space (no `fixed`) can be millions of configurations: fix some knobs, or draw
        configurations and test them with `feasible`."""
        fixed = dict(fixed or {})
        names = list(self.knobs)
        choices = [(fixed[k],) if k in fixed else self.knobs[k] for k in names]
        combos = (dict(zip(names, values)) for values in itertools.product(*choices))
        return [c for c in combos if self.feasible(c, key)]

    # ----- moves
    def snap(self, knob: str, value: Any) -> Any:
        """The allowed value of `knob` nearest to `value`, or None. A switch (allowed values all bools) takes a
        bool or 0/1 and gives the bool; a numeric knob takes a number (not a bool) and gives the allowed value of
        smallest |log ratio|; any other knob only its exact allowed values."""
        allowed = self.knobs[knob]
        if all(isinstance(a, bool) for a in allowed):
            ok = isinstance(value, (bool, int, float)) and value in (0, 1) and bool(value) in allowed
            return bool(value) if ok else None
        if isinstance(value, bool):
            return None
        if value in allowed:
            return allowed[allowed.index(value)]
        if not isinstance(value, (int, float)):
            return None
        numeric = [a for a in allowed if isinstance(a, (int, float)) and not isinstance(a, bool) and a > 0]
        if not numeric or value <= 0:
            return None
        return min(numeric, key=lambda a: abs(math.log(a / value)))

    def neighbors(self, config: Mapping[str, Any], key: str, feasible: bool = True) -> list[tuple[str, int, Config]]:
        """Configurations one knob step away: ``(knob, direction +1/-1, config)``; a switch's one neighbour is its
        flip (+1: False -> True, -1: True -> False). Only feasible ones unless `feasible` is False (steps that fit
        only together with another, e.g. a sub-knob of a switch that is off, for combining)."""
        out = []
        for knob, allowed in self.knobs.items():
            i = allowed.index(config[knob]) if config[knob] in allowed else None
            if i is None:
                continue
            for step in (-1, 1):
                if 0 <= i + step < len(allowed):
                    moved = {**config, knob: allowed[i + step]}
                    if not feasible or self.feasible(moved, key):
                        out.append((knob, step, moved))
        return out

    def structure_config(self, key: str) -> Config:
        """The baseline kernel's structure as a family configuration for class `key`
        (`KernelFamily.structure_config` over the class's cases)."""
        return self.complete(self.family.structure_config(self._class_features(key), self.profile))

    def programs(self, config: Mapping[str, Any] | None, case: Case) -> int:
        """Programs with work a launch has for `case` (the occupancy diagnosis); `config` None is the baseline."""
        return self.family.programs(config, self.features(case), self.profile)

    def value_label(self, knob: str, value: Any) -> str:
        """A knob value as progress lines show it (the family's `value_labels`, e.g. num_splits 0 = ``auto``)."""
        label = dict(self.family.value_labels.get(knob, {})).get(value)
        return label if label is not None else str(value)

    def complete(self, config: Mapping[str, Any]) -> Config:
        """`config` with a value for every knob of the space: a knob it lacks gets the family's default, which is
        what a candidate rendered without that knob ran with (e.g. a configuration recorded in a finding before
        the knob existed)."""
        defaults = self.family.defaults()
        return {**{k: defaults[k] for k in self.knobs if k in defaults}, **dict(config)}

    def full_table(self, table: Mapping[str, Mapping[str, Any]]) -> Table:
        """`table` with every class of the run's cases present: classes it lacks get `structure_config`, so a
        run starts from the baseline kernel's structure inside the family; every configuration `complete`."""
        return {k: self.complete(table.get(k) or self.structure_config(k)) for k in sorted(self.classes)} | {
            k: self.complete(v) for k, v in table.items() if k not in self.classes}

    # ----- rendering
    def render(self, table: Mapping[str, Mapping[str, Any]], signature: inspect.Signature, header: Mapping[str, Any]
               ) -> str:
        """Source of a candidate file for `table` from the task's candidate template; `header` holds id,
        parent_id, generation, patterns, rationale, run_id, chip (shown in the docstring). `signature` is the
        baseline entry point's."""
        bare = signature.replace(
            parameters=[p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()],
            return_annotation=inspect.Signature.empty)
        names = list(bare.parameters)
        full = self.full_table(table)
        configs = [(k, ", ".join(f"{n}={full[k][n]!r}" for n in self.knobs)) for k in sorted(full)]
        return render_file(self.task.files.candidate_template, header=dict(header), configs=configs,
                           family_module=self.family.module,
                           ridge=self.ridge, limits=self.limits,
                           signature=_wrap(str(bare)[1:-1].split(", "), indent=4),
                           call_args=_wrap([f"{n}={n}" for n in names], indent=8),
                           entry_point=self.task.entry_point)


def _wrap(items: list[str], indent: int, width: int = 110) -> str:
    """Comma-separated `items` broken into lines of at most `width` characters, continued at `indent`."""
    lines, line = [], ""
    for item in items:
        piece = f"{line}, {item}" if line else item
        if line and len(piece) + indent > width:
            lines.append(line + ",")
            line = item
        else:
            line = piece
    lines.append(line)
    return ("\n" + " " * indent).join(lines)
