"""The offline pattern-guided proposer (default; no network).

It turns ranked patterns (with parameters the knowledge base computed for this chip and case) and verified
findings into family configurations per case class, then explores around the best one knob step at a time.
It combines knobs: two-knob moves pair any one-knob steps, also steps that fit only together (a sub-knob of a
switch that is off). It learns from this run's verdicts: failed configurations are never retried, knob moves that
won or lost are scored up or down (per class, and half as much across classes), the fastest verified configuration
of a class becomes its exploration centre, and after a multi-class candidate is rejected the classes that did
improve are proposed on their own. A class whose plan lost while it is still on the baseline's structure gets its
next-ranked plan (without the patterns this run scored down, or the task's tuned rule, ranked right after the top
plan) before any class is explored knob by knob. It never proposes the same dispatch table twice (content hash).
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agent.acceptance import geomean
from agent.errors import SearchSpaceExhausted
from agent.family_space import Config, FamilySpace, config_key, table_hash
from agent.proposers.base import Proposal, ProposalContext
from agent.runstate import EvalRecord, Lineage

#: Configurations a class still on the baseline's structure may have tried and still come first to try its
#: next-ranked knowledge plan (`PatternGuidedProposer._replanning`): the top plan and two more.
REPLAN_TRIES = 3
#: The note of the plan that is the task's tuned entry point's rule (proposed whole, never onto a centre).
TUNED_RULE = "the tuned entry point's rule"


@dataclass(frozen=True)
class Plan:
    """A configuration for one class derived from knowledge: which patterns (or finding) it came from."""

    config: Config
    patterns: tuple[str, ...]
    note: str
    citations: tuple[str, ...] = ()


class PatternGuidedProposer:
    """See the module docstring. `space` is the family space of the run's cases on this chip."""

    name = "offline"

    def __init__(self, space: FamilySpace) -> None:
        self.space = space
        self.tried: set[str] = set()
        self.tried_in_class: set[tuple[str, str]] = set()
        self.failed: dict[str, set[str]] = defaultdict(set)
        self.observed: dict[str, dict[str, list[float]]] = defaultdict(dict)
        self.configs: dict[str, Config] = {}
        self.move_stats: Counter[tuple[str, str, int]] = Counter()
        self.pattern_stats: Counter[str] = Counter()
        self.stale: Counter[str] = Counter()
        self.last: tuple[Lineage, EvalRecord] | None = None
        self.any_accepted = False

    # ----- learning
    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        """Update statistics from one finished evaluation."""
        if lineage is None:
            return
        self.tried.add(lineage.content_hash)
        self.last = (lineage, record)
        self.any_accepted |= record.accepted
        table, changed = lineage.parameters.get("table", {}), lineage.parameters.get("classes", [])
        # a class the table leaves out ran the baseline's structure (`FamilySpace.full_table`, as rendered)
        for key, config in self.space.full_table(table).items():
            config = self.space.complete(config)  # a run resumed across a new knob: the family's default
            ck = config_key(config)
            self.configs[ck] = config
            if record.passed and record.timed:
                times = [record.time_us[c] for c in self.space.class_cases(key) if c in record.time_us]
                if times:
                    self.observed[key].setdefault(ck, []).append(geomean(times))
            if key not in changed:
                continue
            self.tried_in_class.add((key, ck))
            if not record.passed:
                self.failed[key].add(ck)
            self.stale[key] = 0 if record.accepted else self.stale[key] + 1
        sign = 1 if record.accepted else -1
        move = lineage.parameters.get("move")
        if move and move.get("knob"):
            self.move_stats[(move["class"], move["knob"], move["direction"])] += sign
            self.move_stats[("*", move["knob"], move["direction"])] += sign
        for pattern in lineage.patterns:
            self.pattern_stats[pattern] += sign

    # ----- proposing
    def propose(self, ctx: ProposalContext) -> Proposal:
        """Next untried candidate: full knowledge plan, then a merge of improved classes, then per-class moves.

        Raises:
            SearchSpaceExhausted: every candidate this proposer would make has been tried.
        """
        plans = {k: self._plans(k, ctx) for k in self.space.classes}
        for proposal in itertools.chain(self._full_plan(ctx, plans), self._merge(ctx)):
            if proposal.content_hash not in self.tried:
                return proposal
        for key in self._class_order(ctx):
            for config, patterns, note, move, cites in self._class_candidates(key, ctx, plans[key]):
                table = {**ctx.best_table, key: config}
                retry = move is not None and move.get("knob") is None  # the class's fastest configuration again
                if table_hash(table) in self.tried or (not retry and (key, config_key(config)) in self.tried_in_class):
                    continue
                return self._proposal(ctx, table, [key], {key: list(patterns)}, note, move, list(cites))
        raise SearchSpaceExhausted("offline proposer: every configuration it would propose has been tried")

    def _full_plan(self, ctx: ProposalContext, plans: Mapping[str, list[Plan]]) -> Iterator[Proposal]:
        """Before anything is accepted: every class at once on its top plan (the knowledge's best guess)."""
        if self.any_accepted or not any(plans.values()):
            return
        table = {**ctx.best_table, **{k: ps[0].config for k, ps in plans.items() if ps}}
        per_class = {k: list(ps[0].patterns) for k, ps in plans.items() if ps}
        notes = "; ".join(f"{k}: {ps[0].note}" for k, ps in plans.items() if ps)
        cites = [c for ps in plans.values() if ps for c in ps[0].citations]
        yield self._proposal(ctx, table, sorted(per_class), per_class, f"top plan per class ({notes})", None, cites)

    def _merge(self, ctx: ProposalContext) -> Iterator[Proposal]:
        """After a rejected multi-class candidate: keep only the classes whose every case got faster."""
        if not self.last or not ctx.best_time_us:
            return
        lineage, record = self.last
        changed = lineage.parameters.get("classes", [])
        if record.accepted or not record.passed or not record.timed or len(changed) < 2:
            return
        improved = [k for k in changed if all(
            c in record.time_us and record.time_us[c] < ctx.best_time_us.get(c, float("inf"))
            for c in self.space.class_cases(k))]
        if improved and len(improved) < len(changed):
            table = {**ctx.best_table, **{k: lineage.parameters["table"][k] for k in improved}}
            per_class = lineage.parameters.get("class_patterns") or {}
            yield self._proposal(ctx, table, improved, {k: per_class.get(k, []) for k in improved},
                                 f"keep the classes {lineage.id} sped up ({', '.join(improved)}); "
                                 f"drop the ones it slowed down", None, [])

    def _blocking(self, ctx: ProposalContext) -> set[str]:
        """Classes that kept a candidate from being accepted while the baseline is still best: some of their
        cases were slower than the baseline beyond the regression limit (the family's starting configuration
        can be slower than the baseline kernel there). Recomputed from the history, so resume agrees."""
        if ctx.best_id != "v0" or not ctx.best_time_us:
            return set()
        out = set()
        for record in ctx.history:
            if record.passed and record.timed:
                for key in self.space.classes:
                    if any(record.time_us.get(c, 0.0) > ctx.best_time_us[c] * (1 + ctx.regression_limit
                                                                                 + ctx.noise.get(c, 0.0))
                           for c in self.space.class_cases(key)):
                        out.add(key)
        return out

    def _class_order(self, ctx: ProposalContext) -> list[str]:
        """Classes by expected benefit: headroom (sum over their cases of 1 - roofline fraction; 1 per case when
        untimed) over (1 + evaluations since the class last improved) squared, a fifth of that once every
        one-step neighbour of the class's centre has been tried (a local optimum). Classes that block the
        first acceptance (`_blocking`) come before all others, then classes to re-plan (`_replanning`)."""
        blocking = self._blocking(ctx)
        replan = self._replanning(ctx)

        def priority(key: str) -> float:
            headroom = 0.0
            for case_id in self.space.class_cases(key):
                d = ctx.diagnoses.get(case_id)
                fraction = d.roofline_fraction if d is not None else None
                headroom += 1.0 if fraction is None else max(0.0, 1.0 - fraction)
            centre = self._centre(key, ctx, [])
            fresh = any((key, config_key(c)) not in self.tried_in_class for _k, _d, c in
                        self.space.neighbors(centre, key))
            return headroom / (1 + self.stale[key]) ** 2 * (1.0 if fresh else 0.2)
        return sorted(self.space.classes, key=lambda k: (k not in blocking, k not in replan, -priority(k), k))

    def _improved(self, key: str, ctx: ProposalContext) -> bool:
        """The best table runs class `key` on something other than the baseline's structure (an accepted
        candidate changed it)."""
        return key in ctx.best_table and config_key(self.space.complete(ctx.best_table[key])) != config_key(
            self.space.structure_config(key))

    def _replanning(self, ctx: ProposalContext) -> set[str]:
        """Classes whose knowledge plan was tried and lost (rejected, or dropped from a merge as slower) while the
        class is still on the baseline's structure, and that have a knowledge plan not yet tried: such a class
        gets its next-ranked plan before any class is explored knob by knob, so a regressing first plan cannot
        leave it on the baseline; at most `REPLAN_TRIES` configurations of a class are tried that way."""
        out = set()
        for key in self.space.classes:
            tries = sum(1 for k, _ck in self.tried_in_class if k == key)
            if self._improved(key, ctx) or not 0 < tries < REPLAN_TRIES:
                continue
            if any((key, config_key(p.config)) not in self.tried_in_class for p in self._plans(key, ctx)):
                out.add(key)
        return out

    def _centre(self, key: str, ctx: ProposalContext, plans: list[Plan]) -> Config:
        """Where to explore: the fastest configuration of the class seen in this run (median over its
        measurements of its cases' geomean), else the best table's, else the first knowledge plan, else the
        baseline structure."""
        if self.observed[key]:
            seen = self.observed[key]
            return dict(self.configs[min(seen, key=lambda ck: statistics.median(seen[ck]))])
        if key in ctx.best_table:
            return dict(ctx.best_table[key])
        for plan in plans:
            if config_key(plan.config) not in self.failed[key]:
                return dict(plan.config)
        return self.space.structure_config(key)

    def _class_candidates(self, key: str, ctx: ProposalContext, plans: list[Plan]
                          ) -> Iterator[tuple[Config, tuple[str, ...], str, dict | None, tuple[str, ...]]]:
        centre = self._centre(key, ctx, plans)
        running = ctx.best_table.get(key) or self.space.structure_config(key)  # what the best candidate runs
        if self.observed[key] and centre != running:
            # the fastest configuration of this class so far sits in a candidate that was rolled back for
            # another class's sake: propose it alone
            yield centre, (), "the fastest configuration seen for this class, alone", {"class": key, "knob": None}, ()
        tuned = ctx.best_id != "v0" or bool(self.observed[key])
        for plan in plans:
            if not tuned or plan.note.startswith("verified") or plan.note == TUNED_RULE:  # whole configurations
                yield plan.config, plan.patterns, plan.note, None, plan.citations
            onto = self._apply(centre, plan.config, key, only=self._knobs_of(plan, key))
            if onto is not None:
                yield onto, plan.patterns, f"{plan.note}, onto the current centre", None, plan.citations
        targets = self._pattern_targets(key, ctx)
        steps = sorted(self.space.neighbors(centre, key),
                       key=lambda s: -self._move_score(key, s[0], s[1], s[2][s[0]], centre, targets))
        for knob, direction, config in steps:
            move = {"class": key, "knob": knob, "direction": direction, "from": centre[knob], "to": config[knob]}
            why = self._move_reason(key, knob, direction, config[knob], targets)
            label = self.space.value_label
            yield (config, why[0], f"{knob} {label(knob, centre[knob])} -> {label(knob, config[knob])}{why[1]}",
                   move, why[2])
        # pairs of steps, each feasible alone or not (gather-ahead's sub-knobs fit only with gather-ahead on)
        single = {(k, config[k]) for k, _d, config in steps}
        raw = steps + [s for s in sorted(self.space.neighbors(centre, key, feasible=False),
                                         key=lambda s: -self._move_score(key, s[0], s[1], s[2][s[0]], centre, targets))
                       if (s[0], s[2][s[0]]) not in single]
        for (k1, _d1, c1), (k2, _d2, c2) in itertools.combinations(raw, 2):
            if k1 != k2:
                config = {**c1, k2: c2[k2]}
                if self.space.feasible(config, key):
                    yield (config, (), f"{k1} -> {self.space.value_label(k1, config[k1])} and {k2} -> "
                           f"{self.space.value_label(k2, config[k2])}", None, ())

    # ----- knowledge -> configurations
    def _plans(self, key: str, ctx: ProposalContext) -> list[Plan]:
        """Findings first (fastest verified configurations of this class on this chip), then patterns ranked
        for the class's cases, applied cumulatively (higher score keeps its knob values) and one at a time.
        A pattern whose summed score over the class is negative (the knowledge expects it to slow the class down,
        e.g. pre-gathering a decode prefix) is not applied; it still weighs against its values in `_move_score`.
        Once a candidate was accepted and this run has scored a pattern down (its candidates lost more often than
        they won, `observe`; before an acceptance every pattern of the first plan lost equally), the cumulative
        plan without such patterns comes first among the pattern plans: the next-ranked plan after a plan that
        regressed. The task's tuned entry point's rule for the class (`FamilySpace.tuned_config`,
        where the task has one) comes right after the cumulative plan, so a class whose knowledge plan loses is
        never left below the rule the task already ships."""
        plans = self._finding_plans(key, ctx)
        ranked = [r for r in self._aggregate_patterns(key, ctx) if r[1][1] >= 0]
        base = self.space.structure_config(key)
        blamed = [pid for pid, _r in ranked if self.pattern_stats[pid] < 0]
        if self.any_accepted and blamed and len(blamed) < len(ranked):
            kept_prefixes = self._cumulative(key, [r for r in ranked if r[0] not in blamed])
            if kept_prefixes:
                kept = kept_prefixes[-1]
                plans.append(Plan(kept.config, kept.patterns, f"{kept.note} (without {', '.join(blamed)}, which "
                                                              f"lost in this run)", kept.citations))
        prefix_plans = self._cumulative(key, ranked)
        if prefix_plans:
            plans.append(prefix_plans[-1])
        tuned = self.space.tuned_config(key)
        if tuned is not None:
            plans.append(Plan(tuned, (), TUNED_RULE))
        if prefix_plans:
            plans.extend(reversed(prefix_plans[:-1]))
        for pattern_id, (knobs, _score, pc) in ranked:
            single = self._apply(base, knobs, key)
            if single is not None:
                plans.append(Plan(single, (pattern_id,), f"pattern {pattern_id} alone", tuple(pc[:2])))
        unique: dict[str, Plan] = {}
        for plan in plans:
            unique.setdefault(config_key(plan.config), plan)
        return [p for p in unique.values() if config_key(p.config) not in self.failed[key]]

    def _cumulative(self, key: str, ranked: list) -> list[Plan]:
        """`ranked` patterns applied cumulatively onto the class's structure (a higher-ranked one keeps its knob
        values): one plan per pattern that applied, each holding it and all before it (the last holds them all);
        empty when none applies."""
        config, applied, cites, set_knobs = self.space.structure_config(key), [], [], set()
        prefixes: list[Plan] = []
        for pattern_id, (knobs, _score, pc) in ranked:
            new = {k: v for k, v in knobs.items() if k not in set_knobs}
            moved = self._apply(config, new, key)
            if moved is None:
                continue
            config, set_knobs = moved, set_knobs | set(new)
            applied.append(pattern_id)
            cites.extend(pc[:2])
            prefixes.append(Plan(dict(config), tuple(applied), "patterns " + " + ".join(applied), tuple(cites)))
        return prefixes

    def _finding_plans(self, key: str, ctx: ProposalContext) -> list[Plan]:
        """Configurations of this class that earlier runs accepted, best first: accepted findings grouped by
        configuration, ranked by (this chip first, share of the class's cases measured, geomean speedup). A
        configuration that does not fit this chip (measured on one with more shared memory or threads per block)
        is re-fitted to this chip's limits by the family's rule (`FamilySpace.refit`): its split factor and
        switches kept, its tiles, stages and warps adapted; one that cannot fit is left out."""
        cases = set(self.space.class_cases(key))
        groups: dict[tuple[str, str], dict] = {}
        for f in ctx.retrieval.findings:
            meta = f.metadata or {}
            params = meta.get("parameters") or {}
            # knobs a finding does not record (it predates them) ran at the family's default
            recorded = {k: params[k] for k in self.space.knobs if k in params}
            if (meta.get("status") != "accepted" or not meta.get("speedup") or params.get("dispatch_class") != key
                    or not recorded):
                continue
            measured = self.space.complete(recorded)
            config = self.space.refit(measured, key)  # measured on a chip with other limits: adapted to this one's
            if config is None:
                continue
            group = groups.setdefault((str(meta.get("chip")), config_key(config)), {
                "config": config, "speedups": {}, "cites": [], "patterns": tuple(meta.get("patterns") or ()),
                "refit": _refit_note(measured, config, self.space)})
            case_id = meta.get("case_id")  # two findings re-fitted to one configuration: the faster counts
            group["speedups"][case_id] = max(float(meta["speedup"]), group["speedups"].get(case_id, 0.0))
            group["cites"].append(f.cite)
        ranked = sorted(groups.items(), key=lambda kv: (
            kv[0][0] != ctx.chip, -len(cases & set(kv[1]["speedups"])) / max(len(cases), 1),
            -geomean(list(kv[1]["speedups"].values()))))
        plans = []
        for (chip, _ck), g in ranked:
            gain = geomean(list(g["speedups"].values()))
            plans.append(Plan(dict(g["config"]), g["patterns"],
                              f"verified x{gain:.2f} on {chip} ({len(g['speedups'])} case(s); {g['cites'][0]})"
                              f"{g['refit']}", tuple(g["cites"][:2])))
        return plans

    def _aggregate_patterns(self, key: str, ctx: ProposalContext
                            ) -> list[tuple[str, tuple[dict[str, Any], float, list[str]]]]:
        """Patterns ranked for the class's cases: score summed over cases, plus this run's wins and losses;
        knob values from the case where the pattern scored highest."""
        agg: dict[str, tuple[dict[str, Any], float, float, list[str]]] = {}
        for case_id in self.space.class_cases(key):
            for view in ctx.retrieval.patterns.get(case_id, []):
                knobs = {k: v for k, v in view.knobs.items() if k in self.space.knobs}
                if not knobs or not view.applicable:
                    continue
                prev = agg.get(view.pattern_id)
                total = (prev[1] if prev else 0.0) + view.score
                if prev is None or view.score > prev[2]:
                    agg[view.pattern_id] = (knobs, total, view.score, view.citations)
                else:
                    agg[view.pattern_id] = (prev[0], total, prev[2], prev[3])
        ranked = sorted(agg.items(), key=lambda kv: (-(kv[1][1] + 0.5 * self.pattern_stats[kv[0]]), kv[0]))
        return [(pid, (knobs, total, cites)) for pid, (knobs, total, _best, cites) in ranked]

    def _pattern_targets(self, key: str, ctx: ProposalContext) -> dict[str, list[tuple[Any, float, str, list[str]]]]:
        """knob -> [(value a ranked pattern wants, its score, pattern id, citations)] for the class."""
        targets: dict[str, list[tuple[Any, float, str, list[str]]]] = defaultdict(list)
        for pattern_id, (knobs, score, cites) in self._aggregate_patterns(key, ctx):
            for knob, value in knobs.items():
                snapped = self.space.snap(knob, value)
                if snapped is not None:
                    targets[knob].append((snapped, score, pattern_id, cites))
        return targets

    def _move_score(self, key: str, knob: str, direction: int, value: Any, centre: Config,
                    targets: Mapping[str, list]) -> float:
        score = self.move_stats[(key, knob, direction)] + 0.5 * self.move_stats[("*", knob, direction)]
        for want, weight, _pid, _c in targets.get(knob, []):
            if want == value or (_numeric(want) and _numeric(value) and (want - centre[knob]) * direction > 0):
                score += weight
            else:
                score -= 0.5 * weight
        return score

    def _move_reason(self, key: str, knob: str, direction: int, value: Any, targets: Mapping[str, list]
                     ) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
        for want, _w, pattern_id, cites in targets.get(knob, []):
            if want == value:
                why = f" (pattern {pattern_id} wants {knob}={self.space.value_label(knob, want)})"
                return (pattern_id,), why, tuple(cites[:2])
        won = self.move_stats[(key, knob, direction)] > 0
        return (), f" (explore around the best{'; this direction has won before' if won else ''})", ()

    def _knobs_of(self, plan: Plan, key: str) -> set[str]:
        base = self.space.structure_config(key)
        return {k for k, v in plan.config.items() if base.get(k) != v}

    def _apply(self, config: Config, knobs: Mapping[str, Any], key: str, only: set[str] | None = None
               ) -> Config | None:
        """`config` with `knobs` snapped to allowed values; None if nothing changes or the result does not fit."""
        out = dict(config)
        for knob, value in knobs.items():
            if knob not in self.space.knobs or (only is not None and knob not in only):
                continue
            snapped = self.space.snap(knob, value)
            if snapped is not None:
                out[knob] = snapped
        if out == config or not self.space.feasible(out, key):
            return None
        return out

    # ----- output
    def _proposal(self, ctx: ProposalContext, table: dict[str, Config], classes: list[str],
                  class_patterns: dict[str, list[str]], note: str, move: dict | None, cites: list[str]) -> Proposal:
        patterns = sorted({p for ps in class_patterns.values() for p in ps})
        targets = [c for k in classes for c in self.space.class_cases(k)]
        diag = "; ".join(ctx.diagnoses[c].summary() for c in targets if c in ctx.diagnoses)
        rationale = f"{', '.join(classes)}: {note}. Diagnosis: {diag or 'none'}."
        if cites:
            rationale += " Evidence: " + "; ".join(dict.fromkeys(cites)) + "."
        header = {"id": f"v{ctx.n}", "parent_id": ctx.best_id, "generation": _generation(ctx) + 1,
                  "patterns": patterns, "rationale": rationale, "run_id": ctx.run_id, "chip": ctx.chip}
        source = self.space.render(table, ctx.signature, header)
        params = {"table": table, "classes": classes, "move": move, "class_patterns": class_patterns,
                  "dispatch": {c: k for k, ids in self.space.classes.items() for c in ids}}
        return Proposal(source, table_hash(table), patterns, params, rationale, targets)


def _refit_note(measured: Config, fitted: Config, space: FamilySpace) -> str:
    """``, re-fitted to this chip (block_n 128 -> 32, ...)`` for a finding's configuration, or "" if it fit."""
    moved = [f"{k} {space.value_label(k, measured[k])} -> {space.value_label(k, fitted[k])}"
             for k in space.knobs if measured.get(k) != fitted.get(k)]
    return f", re-fitted to this chip ({', '.join(moved)})" if moved else ""


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _generation(ctx: ProposalContext) -> int:
    return ctx.best_lineage.generation if ctx.best_lineage else 0
