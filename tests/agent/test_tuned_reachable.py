"""The agent can reach the hand-tuned extend-attention entry point on the H200 (issue 20): every configuration the
tuned entry point runs on a bench case is one configuration of the knob space for the case's class, rendered into
a candidate; and the offline proposer, fed by the real catalog from an empty findings store, proposes it.

Expected values are the tuned module's own output (`tuned.choose_config`), compared as the configurations the
family launches (`family.launch_config`: call-dependent values resolved, fitted to the chip, splits derived)."""

from __future__ import annotations

import importlib.util
import inspect
import random

import pytest
import torch

from agent.context import gather
from agent.family_space import FamilySpace, table_hash
from agent.proposers.base import ProposalContext
from agent.proposers.offline import PatternGuidedProposer
from agent.runstate import EvalRecord, Lineage
from hardware_profiles import load_profile
from kernels.chip import ChipLimits
from kernels.extend_attention import baseline
from kernels.extend_attention.family import FamilyConfig, launch_config
from kernels.extend_attention.family_space import UNSEARCHED, case_shape
from kernels.extend_attention.spec import TASK
from kernels.extend_attention.tuned import choose_config

SIG = inspect.signature(baseline.extend_attention_fwd)
HEADER = {"id": "v1", "parent_id": "v0", "generation": 1, "patterns": [], "rationale": "tuned", "run_id": "run",
          "chip": "h200"}
#: Proposals within which the proposer must have proposed every class's tuned configuration: the first candidate
#: (the knowledge's top plan for every class at once). With every candidate rejected as slower (the worst feedback),
#: each class's configuration must come back within `AFTER_REJECTION` more proposals (alone or in a full plan):
#: 1 + 10 evaluations of a 40-evaluation budget.
N_FIRST = 1
AFTER_REJECTION = 10


@pytest.fixture(scope="module")
def h200():
    return load_profile("h200")


@pytest.fixture(scope="module")
def space(h200):
    return FamilySpace(TASK, h200, list(TASK.bench_cases))


def _hint(case) -> int:
    return max(case.params["extend_lens"]) + int(case.params.get("max_len_extend_slack") or 0)


def _tuned_launch(case, limits: ChipLimits) -> FamilyConfig:
    """What the tuned entry point launches for `case`: its own choice, resolved as `run_family` resolves it."""
    shape = case_shape(case)
    prob = shape.problem()
    return launch_config(choose_config(prob, limits, _hint(case)), prob, limits, shape.v_is_k, _hint(case))


def _launch(config: FamilyConfig, case, limits: ChipLimits) -> FamilyConfig:
    shape = case_shape(case)
    return launch_config(config, shape.problem(), limits, shape.v_is_k, _hint(case))


def _class_config(space: FamilySpace, key: str, limits: ChipLimits) -> dict:
    """The one configuration of class `key` in the knob space that launches, on every case of the class, what the
    tuned entry point launches: found by search over the space's values of the knobs where the tuned choices of
    the class's cases differ (the call-dependent ones), the others at the tuned value."""
    cases = [TASK.case(c) for c in space.class_cases(key)]
    tuned = [_tuned_launch(c, limits) for c in cases]
    first = tuned[0].to_dict()
    varying = [k for k in space.knobs if any(t.to_dict()[k] != first[k] for t in tuned)]
    # a call-dependent knob: its derived values (and the tile knobs a ragged call changes) are in the space
    candidates = [dict(first)]
    for knob in varying + ["gather_ahead", "ahead_sync", "ragged_tiles"]:
        candidates = [{**c, knob: v} for c in candidates for v in space.knobs[knob]]
    for config in candidates:
        if space.feasible(config, key) and all(_launch(FamilyConfig(**config), c, limits) == t
                                               for c, t in zip(cases, tuned)):
            return config
    raise AssertionError(f"{key}: no configuration of the knob space launches the tuned configurations {tuned}")


def test_every_knob_the_tuned_entry_point_sets_is_searchable(space):
    assert set(space.knobs) == set(FamilyConfig.__dataclass_fields__) - UNSEARCHED
    defaults = FamilyConfig().to_dict()
    for case in TASK.bench_cases:
        tuned = choose_config(case_shape(case).problem(), ChipLimits(**space.limits), _hint(case))
        for knob, value in tuned.to_dict().items():
            if knob in UNSEARCHED:
                assert value == defaults[knob], (case.id, knob, value)
                continue
            assert value in space.knobs[knob] or knob == "num_splits", (case.id, knob, value)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _meta_call(case):
    s = case_shape(case)
    return (torch.empty(s.total_extend, s.num_q_heads, s.head_dim, device="meta"),
            torch.empty(s.total_extend, s.num_kv_heads, s.head_dim, device="meta"),
            torch.empty(s.batch + 1, device="meta"))


@pytest.mark.slow
def test_the_tuned_configuration_of_each_bench_case_renders_into_one_candidate(space, tmp_path):
    """(a) One configuration per class; the rendered candidate picks, for each of the 9 bench cases (its class from
    tensor metadata), a FamilyConfig that launches what the tuned entry point launches."""
    limits = ChipLimits(**space.limits)
    table = {key: _class_config(space, key, limits) for key in space.classes}
    path = tmp_path / "kernel_v1.py"
    path.write_text(space.render(table, SIG, HEADER))
    module = _load(path, "tuned_candidate")
    assert module.CHIP_LIMITS == limits
    for case in TASK.bench_cases:
        picked = module._config_for(module.call_class(*_meta_call(case), module.RIDGE_FLOP_PER_BYTE))
        assert picked == FamilyConfig(**table[space.class_of(case)]), case.id
        assert _launch(picked, case, limits) == _tuned_launch(case, limits), case.id


def _context(space, h200, retrieval, n, best_table, history, best_time_us):
    return ProposalContext(
        n=n, run_id="tuned", chip="h200", task=TASK, profile=h200, cases=list(TASK.bench_cases), space=space,
        signature=SIG, diagnoses={}, retrieval=retrieval, best_id="v0", best_source="", best_lineage=None,
        best_table=best_table, best_time_us=best_time_us, baseline_time_us=best_time_us, noise={},
        last_verdict=None, history=history, rng=random.Random(n), timed=True)


def _reaches(space, proposal, limits) -> set[str]:
    """Classes whose configuration in `proposal` launches the tuned configuration on every case of the class."""
    table = proposal.parameters["table"]
    return {key for key in proposal.parameters["classes"]
            if all(_launch(FamilyConfig(**space.complete(table[key])), TASK.case(c), limits)
                   == _tuned_launch(TASK.case(c), limits) for c in space.class_cases(key))}


def test_the_proposer_proposes_the_tuned_configuration_from_an_empty_store(space, h200, chiplore_home):
    """(b) From an empty findings store the first proposal holds every class's tuned configuration; with every
    candidate rejected as slower, each class's configuration comes back within `AFTER_REJECTION` proposals."""
    from agent.adapters import StoreKnowledge

    knowledge = StoreKnowledge(h200)
    knowledge.check()
    retrieval = gather(knowledge, TASK, h200, "h200", list(TASK.bench_cases), {}, docs_k=0, findings_k=12)
    assert not retrieval.findings
    limits = ChipLimits(**space.limits)
    proposer = PatternGuidedProposer(space)
    slower = {c.id: 1000.0 for c in TASK.bench_cases}
    history: list[EvalRecord] = []
    reached: dict[str, int] = {}
    for n in range(1, N_FIRST + AFTER_REJECTION + 1):
        proposal = proposer.propose(_context(space, h200, retrieval, n, {}, history, slower))
        assert proposal.content_hash == table_hash(proposal.parameters["table"])
        for key in _reaches(space, proposal, limits):
            reached.setdefault(key, n)
        lineage = Lineage(id=f"v{n}", parent_id="v0", generation=1, proposer="offline", patterns=proposal.patterns,
                          parameters=proposal.parameters, content_hash=proposal.content_hash)
        record = EvalRecord(n=n, candidate_id=f"v{n}", parent_id="v0", proposer="offline", stage="pass",
                            passed=True, timed=True, accepted=False, decision="rejected: slower",
                            time_us={c: 1.1 * t for c, t in slower.items()}, parameters=proposal.parameters,
                            content_hash=proposal.content_hash)
        proposer.observe(lineage, record)
        history.append(record)
        if n == N_FIRST:
            assert set(reached) == set(space.classes), (reached, proposal.rationale)
            reached = {}
    assert set(reached) == set(space.classes), reached
