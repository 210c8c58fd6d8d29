"""Rank the catalog's patterns for a chip, a task and a case, with parameters computed for that chip.

For each pattern of the task:

1. Parameters: the catalog's parameter rules evaluated over the chip profile, the case and the diagnosis; a rule
   output that needs a null profile field is ``None`` ("unknown") with the reason, never a crash.
2. Preconditions: ``requires`` ones decide `applicable`; ``favors`` ones are reported (True/False/None=unknown).
3. Prior: the pattern's ``prior_gain`` formula (roofline / occupancy arithmetic on the profile), or unknown.
4. Evidence: findings and published examples from the graph, each weighted by chip similarity x case affinity x
   kind weight (`knowledge.similarity`; weights in the catalog's ``scoring`` section). Same chip = 1.0.
5. Expected gain = exp of the weighted mean of ln(prior) (weight ``prior_weight``; an unknown prior counts as
   ln 1 = 0 with that weight, i.e. "no gain until shown") and the evidence log gains. The score is its log,
   scaled by ``off_diagnosis_factor`` for patterns that do not address a diagnosed bottleneck.

Sorted: applicable patterns first, then by score, then catalog order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec, load_task
from knowledge.catalog import Catalog, Pattern, evaluate_rules, load_catalog
from knowledge.formula import FormulaError, UnknownValue, parse
from knowledge.graph import Evidence, PatternGraph
from knowledge.similarity import chip_features, chip_similarity
from knowledge.variables import case_functions, case_variables, diagnosis_variables, profile_variables


@dataclass(frozen=True)
class WeightedEvidence:
    """Evidence as it entered the ranking: its weight = similarity x case affinity x kind weight."""

    kind: str
    source_id: str
    chip: str
    case_id: str | None
    case_class: str | None
    supports: bool
    log_gain: float
    similarity: float
    affinity: float
    weight: float
    citation: str
    parameters: dict[str, Any] = field(default_factory=dict)
    #: ``measured`` (a finding: a verified run's own timing) or ``public_example`` (a share of a published total,
    #: apportioned over the example's steps by the catalog: a modeled split of a quoted figure).
    basis: str = "measured"
    #: For a public example: the total speedup the source quotes (e.g. 10.0); None for findings.
    quoted_total: float | None = None

    def cite(self) -> str:
        return self.citation


@dataclass(frozen=True)
class PreconditionResult:
    kind: str
    text: str
    formula: str
    holds: bool | None
    reason: str = ""


@dataclass(frozen=True)
class RankedPattern:
    """A pattern ranked for one chip and case (ARCHITECTURE.md, `knowledge.ranking`).

    Attributes:
        pattern_id / name: catalog id and display name.
        parameters: values computed for the chip and case (None = unknown; reason in `unknown`).
        knobs: kernel-family knob values it sets (`FamilyConfig` fields; None = unknown): from the parameter rules,
            or, where a supporting measurement on this same chip recorded the knob, from the best such measurement
            (same case first, then higher gain); `knob_sources` says which ("rule" or "evidence: <citation>").
        expected_gain: modeled expected speedup over the reference kernel: the prior and the evidence combined
            (None when neither a prior nor evidence). Never itself a measurement.
        prior_gain: the modeled prior alone (None when the profile lacks what it needs).
        evidence: weighted evidence with citations. sources: citations of the catalog sources.
        score: ln(expected_gain), scaled off-diagnosis; the sort key among applicable patterns.
        applicable: every ``requires`` precondition holds (or is unknown).
    """

    pattern_id: str
    name: str
    score: float
    expected_gain: float | None
    prior_gain: float | None
    parameters: dict[str, Any]
    knobs: dict[str, Any]
    applicable: bool
    preconditions: list[PreconditionResult]
    evidence: list[WeightedEvidence]
    addresses: tuple[str, ...]
    unknown: dict[str, str] = field(default_factory=dict)
    knob_sources: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    composes_with: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    family_default: bool = False
    family_support: bool = True
    purpose: str = "speed"

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (stable keys; see the CLI's ``--json`` schema)."""
        return _plain(asdict(self))


def rank_patterns(profile: HardwareProfile, task: TaskSpec | str, case: Case | str, diagnosis: Any = None, *,
                  graph: PatternGraph | None = None, catalog: Catalog | None = None) -> list[RankedPattern]:
    """Patterns of `task` ranked for `profile` and `case` (module docstring has the method).

    Args:
        profile: the chip's HardwareProfile (null fields make dependent parameters unknown).
        task: a TaskSpec or task name. case: a Case or a case id of the task.
        diagnosis: optional mapping/object with ``bottleneck`` (memory-bound | compute-bound | occupancy |
            launch-overhead), ``time_us``, ``roofline_fraction``, ``host_overhead_us``, ``programs``.
        graph: the pattern graph (default: `PatternGraph.load()` from $CHIPLORE_HOME).

    Raises:
        BadInputError: unknown task or case (the message lists the known ones).
    """
    spec = _task(task)
    case = _case(spec, case)
    catalog = catalog or load_catalog()
    graph = graph or PatternGraph.load(catalog=catalog)
    values, unknown = _values(catalog, profile, spec, case, diagnosis)
    funcs = case_functions(spec, case)
    bottleneck = _diagnosed_bottleneck(diagnosis)
    features = chip_features(profile)
    ranked = [_rank_one(catalog, p, values, unknown, funcs, graph.evidence(p.id, spec.name), profile.chip,
                        features, case, bottleneck) for p in catalog.patterns_for(spec.name)]
    order = {p.id: i for i, p in enumerate(catalog.patterns)}
    return sorted(ranked, key=lambda r: (not r.applicable, -r.score, order[r.pattern_id]))


def classify_case(profile: HardwareProfile, task: TaskSpec | str, case: Case | str,
                  catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """Each bottleneck's signal for the case: ``{"id", "holds" (True/False/None=unknown), "signal", "reason"}``."""
    spec = _task(task)
    case = _case(spec, case)
    catalog = catalog or load_catalog()
    values, _ = _values(catalog, profile, spec, case, None)
    funcs = case_functions(spec, case)
    out = []
    for b in catalog.bottlenecks:
        signal = catalog.signal(b.id, spec.name)
        holds, reason = _truth(signal, values, funcs) if signal else (None, "no signal")
        out.append({"id": b.id, "holds": holds, "signal": signal, "reason": reason})
    return out


def _values(catalog: Catalog, profile: HardwareProfile, spec: TaskSpec, case: Case,
            diagnosis: Any) -> tuple[dict[str, Any], dict[str, str]]:
    env: dict[str, Any] = {**profile_variables(profile, spec.dtype_of(case)),
                           **case_variables(spec, case), **diagnosis_variables(diagnosis)}
    return evaluate_rules(catalog, spec.name, env, case_functions(spec, case))


def _rank_one(catalog: Catalog, p: Pattern, values: dict[str, Any], unknown: dict[str, str], funcs: dict,
              evidence: list[Evidence], chip: str, features: dict, case: Case, bottleneck: str | None) -> RankedPattern:
    pre = [_precondition(pc.kind, pc.text, pc.formula, values, funcs) for pc in p.preconditions]
    applicable = all(r.holds is not False for r in pre if r.kind == "requires")
    params = {name: values.get(name) for name in p.parameters}
    why = {name: unknown[name] for name in p.parameters if name in unknown}
    knobs = {}
    for knob, formula in p.knobs.items():
        knobs[knob], reason = _value(formula, values, funcs)
        if reason:
            why[f"knob {knob}"] = reason
    prior, reason = _value(p.prior_gain, values, funcs) if p.prior_gain else (None, "no prior formula")
    if prior is not None and prior <= 0:
        prior, reason = None, f"prior {prior} is not a positive gain"
    if p.prior_gain and reason:
        why["prior_gain"] = reason
    weighted = [_weigh(catalog, e, chip, features, case) for e in evidence]
    knob_sources = _measured_knobs(knobs, weighted)
    log_gain = _expected_log_gain(catalog.scoring.prior_weight, prior, weighted)
    known = prior is not None or bool(weighted)
    score = log_gain
    if bottleneck is not None and bottleneck not in p.addresses:
        score *= catalog.scoring.off_diagnosis_factor
    return RankedPattern(
        pattern_id=p.id, name=p.name, score=score, expected_gain=math.exp(log_gain) if known else None,
        prior_gain=None if prior is None else float(prior), parameters=params, knobs=knobs,
        applicable=applicable, preconditions=pre, evidence=sorted(weighted, key=lambda w: -w.weight),
        addresses=p.addresses, unknown=why, knob_sources=knob_sources,
        sources=[catalog.source(s).cite() for s in p.sources],
        composes_with=p.composes_with, conflicts_with=p.conflicts_with, family_default=p.family_default,
        family_support=p.family_support, purpose=p.purpose,
    )


def _measured_knobs(knobs: dict[str, Any], evidence: list[WeightedEvidence]) -> dict[str, str]:
    """Replace rule-derived knob values in place by values a supporting same-chip measurement recorded (same
    case first, then the highest gain); a list of values (an example's alternatives) gives its first. Returns
    where each knob value came from."""
    sources = {k: "rule" for k in knobs}
    measured = sorted((e for e in evidence if e.supports and e.similarity >= 1.0 and e.parameters),
                      key=lambda e: (-e.affinity, -e.log_gain, e.source_id))
    for knob in knobs:
        for e in measured:
            if knob in e.parameters:
                value = e.parameters[knob]
                knobs[knob] = value[0] if isinstance(value, (list, tuple)) and value else value
                sources[knob] = f"evidence: {e.citation}"
                break
    return sources


def _expected_log_gain(prior_weight: float, prior: float | None, evidence: list[WeightedEvidence]) -> float:
    """Weighted mean of ln(prior) (ln 1 when unknown) and the evidence log gains."""
    num = prior_weight * (math.log(prior) if prior is not None else 0.0)
    den = prior_weight
    for e in evidence:
        num += e.weight * e.log_gain
        den += e.weight
    return num / den


def _weigh(catalog: Catalog, e: Evidence, chip: str, features: dict, case: Case) -> WeightedEvidence:
    s = catalog.scoring
    other = e.chip_features if any(v is not None for v in e.chip_features.values()) else _features_of(e.chip)
    sim = chip_similarity(chip, features, e.chip, other, s.similarity_features, s.unknown_feature_similarity)
    if e.case_id is None:
        affinity = s.case_affinity["any_case"]
    elif e.case_id == case.id:
        affinity = s.case_affinity["same_case"]
    elif e.case_class and e.case_class == case.case_class:
        affinity = s.case_affinity["same_class"]
    else:
        affinity = s.case_affinity["other_class"]
    weight = sim * affinity * s.kind_weight.get(e.kind, 1.0)
    example = next((x for x in catalog.examples if x.id == e.source_id), None) if e.kind == "example" else None
    return WeightedEvidence(e.kind, e.source_id, e.chip, e.case_id, e.case_class, e.supports, e.log_gain, sim,
                            affinity, weight, e.citation, dict(e.data.get("parameters") or {}),
                            basis="public_example" if e.kind == "example" else "measured",
                            quoted_total=example.total_speedup if example is not None else None)


_FEATURE_CACHE: dict[str, dict] = {}


def _features_of(chip: str) -> dict:
    """Similarity features of a chip from its profile (`load_profile`), all unknown when it has none."""
    if chip not in _FEATURE_CACHE:
        from knowledge.findings import _profile_for

        _FEATURE_CACHE[chip] = chip_features(_profile_for(chip))
    return _FEATURE_CACHE[chip]


def _value(formula: str | None, values: Mapping[str, Any], funcs: dict) -> tuple[Any, str]:
    """(value, "") or (None, reason) for a formula over the evaluated values."""
    if formula is None:
        return None, "no formula"
    try:
        return parse(formula).evaluate(values, funcs), ""
    except UnknownValue as exc:
        return None, f"needs {exc.name} (unknown)"
    except FormulaError as exc:
        return None, str(exc)


def _truth(formula: str, values: Mapping[str, Any], funcs: dict) -> tuple[bool | None, str]:
    value, reason = _value(formula, values, funcs)
    return (None, reason) if reason else (bool(value), "")


def _precondition(kind: str, text: str, formula: str, values: Mapping[str, Any], funcs: dict) -> PreconditionResult:
    holds, reason = _truth(formula, values, funcs)
    return PreconditionResult(kind, text, formula, holds, reason)


def _diagnosed_bottleneck(diagnosis: Any) -> str | None:
    if diagnosis is None:
        return None
    value = diagnosis.get("bottleneck") if isinstance(diagnosis, Mapping) else getattr(diagnosis, "bottleneck", None)
    return None if value in (None, "", "unknown") else str(value)


def _task(task: TaskSpec | str) -> TaskSpec:
    if isinstance(task, TaskSpec):
        return task
    try:
        return load_task(task)
    except KeyError as exc:
        raise BadInputError(exc.args[0]) from None


def _case(spec: TaskSpec, case: Case | str) -> Case:
    if isinstance(case, Case):
        return case
    try:
        return spec.case(case)
    except KeyError as exc:
        raise BadInputError(exc.args[0]) from None


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
