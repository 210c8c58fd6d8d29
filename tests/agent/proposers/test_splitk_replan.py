"""The offline proposer on split-K GEMM's classes (the real catalog, an empty findings store, the H200 profile):
the one-row class's first plan is the GEMV tile rule's, which launches what the tuned entry point launches (its
GEMV mode at M = 1), and when a class's first plan regresses the class gets its next-ranked plan at once instead
of staying on the baseline.

The verdicts are synthetic (times as multiples of the baseline's, no GPU); what is tested is the proposer's logic.
Expected configurations are computed independently: the tuned entry point's own choices (`tuned.choose_config`,
and its tensor-core tile rule `tuned.dot_config`) and the GEMV tile rule worked by hand (test_gemv_pattern.py)."""

from __future__ import annotations

import inspect
import random
from dataclasses import replace

import pytest
import torch

from agent.context import gather
from agent.family_space import FamilySpace, config_key
from agent.proposers.base import ProposalContext
from agent.proposers.offline import PatternGuidedProposer
from agent.runstate import EvalRecord, Lineage
from hardware_profiles import load_profile
from kernels.chip import ChipLimits
from kernels.splitk_gemm import baseline
from kernels.splitk_gemm.tuned import choose_config, dot_config
from kernels.task import load_task

TASK = load_task("splitk_gemm")
SIG = inspect.signature(baseline.splitk_gemm)
#: The cases of the GPU suite's optimize run (scripts/optimize_splitk_gpu.py): M = 1, 8, 16, 32, 64, 128.
CASES = ["m1-n4096-k14336", "m8-n4096-k14336", "m16-n14336-k4096", "m32-n8192-k28672", "m64-n1408-k2048",
         "m128-n28672-k8192"]
ONE_ROW = "m1-deep"
#: The GEMV tile rule's configuration at M = 1 on the H200 (by hand: test_gemv_pattern.py).
GEMV_TILE = {"gemv": True, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 6, "split_k": 0,
             "fused_reduce": True}
TUNED_KNOBS = ("block_n", "block_k", "num_stages", "num_warps", "fused_reduce", "stream_k")


@pytest.fixture(scope="module")
def h200():
    return load_profile("h200")


@pytest.fixture()
def setup(h200, chiplore_home):
    from agent.adapters import StoreKnowledge

    cases = [TASK.case(c) for c in CASES]
    space = FamilySpace(TASK, h200, cases)
    knowledge = StoreKnowledge(h200)
    knowledge.check()
    retrieval = gather(knowledge, TASK, h200, "h200", cases, {}, docs_k=0, findings_k=12)
    assert not retrieval.findings and ONE_ROW in space.classes
    return space, retrieval, cases


def _tuned_one_row(space) -> dict:
    """The tuned entry point's configuration at M = 1 (its GEMV mode)."""
    return choose_config(ChipLimits(**space.limits), 1, 4096, 14336, torch.bfloat16).to_dict()


def _tiles_one_row(space) -> dict:
    """The tuned entry point's tensor-core tile rule at M = 1 (what the class ran before the GEMV mode was tuned)."""
    return dot_config(ChipLimits(**space.limits), 1, 4096, 14336, torch.bfloat16).to_dict()


def _is_gemv_or_tile_rule(config: dict, tiles: dict) -> bool:
    if config["gemv"]:
        return all(config[k] == v for k, v in GEMV_TILE.items())
    return all(config[k] == tiles[k] for k in TUNED_KNOBS) and config["split_k"] in (0, tiles["split_k"])


def _context(space, h200, retrieval, cases, n, best_id, best_table, history, best_time_us, baseline_us):
    return ProposalContext(
        n=n, run_id="replan", chip="h200", task=TASK, profile=h200, cases=cases, space=space, signature=SIG,
        diagnoses={}, retrieval=retrieval, best_id=best_id, best_source="", best_lineage=None,
        best_table=best_table, best_time_us=best_time_us, baseline_time_us=baseline_us, noise={},
        last_verdict=None, history=history, rng=random.Random(n), timed=True)


def test_first_proposal_gives_the_one_row_class_the_tuned_or_the_gemv_tile(setup, h200):
    space, retrieval, cases = setup
    proposal = PatternGuidedProposer(space).propose(
        _context(space, h200, retrieval, cases, 1, "v0", {}, [], {}, {}))
    config = proposal.parameters["table"][ONE_ROW]
    assert ONE_ROW in proposal.parameters["classes"]
    assert _is_gemv_or_tile_rule(config, _tiles_one_row(space)), config
    # the tuned entry point's one-row plan is the GEMV rule's tile and warps (stages may differ by rule; its
    # explicit split count is the one split_k = 0 sizes, `_launches_tuned`)
    tuned = _tuned_one_row(space)
    assert all(tuned[k] == v for k, v in GEMV_TILE.items() if k not in ("num_stages", "split_k")), tuned


def test_a_class_whose_first_plan_regresses_gets_its_next_plan_at_once(setup, h200):
    """v1 (every class's top plan) is rejected: the one-row case 23 % slower than the baseline, every other case
    40 % faster; v2 (the merge of the classes that sped up) is accepted. v3 must give the one-row class its
    next-ranked plan: a knowledge plan other than v1's, without the pattern only the losing class used, i.e. the
    tensor-core split-K plan of the tuned entry point's tile rule (its own one-row plan is the GEMV plan v1 lost
    with)."""
    space, retrieval, cases = setup
    baseline_us = {c.id: 100.0 for c in cases}
    proposer = PatternGuidedProposer(space)
    history: list[EvalRecord] = []

    def verdict(n, proposal, times, accepted):
        lineage = Lineage(id=f"v{n}", parent_id="v0", generation=1, proposer="offline", patterns=proposal.patterns,
                          parameters=proposal.parameters, content_hash=proposal.content_hash)
        record = EvalRecord(n=n, candidate_id=f"v{n}", parent_id="v0", proposer="offline", stage="pass",
                            passed=True, timed=True, accepted=accepted,
                            decision="accepted" if accepted else "rejected: regressed", time_us=times,
                            parameters=proposal.parameters, content_hash=proposal.content_hash)
        proposer.observe(lineage, record)
        history.append(record)

    v1 = proposer.propose(_context(space, h200, retrieval, cases, 1, "v0", {}, history, baseline_us, baseline_us))
    first_one_row = v1.parameters["table"][ONE_ROW]
    times = {c: (123.0 if c == "m1-n4096-k14336" else 60.0) for c in CASES}
    verdict(1, v1, times, accepted=False)

    v2 = proposer.propose(_context(space, h200, retrieval, cases, 2, "v0", {}, history, baseline_us, baseline_us))
    assert ONE_ROW not in v2.parameters["classes"] and len(v2.parameters["classes"]) == len(space.classes) - 1
    best = {c: (100.0 if c == "m1-n4096-k14336" else 60.0) for c in CASES}
    verdict(2, v2, best, accepted=True)

    v3 = proposer.propose(_context(space, h200, retrieval, cases, 3, "v2", v2.parameters["table"], history, best,
                                   baseline_us))
    assert v3.parameters["classes"] == [ONE_ROW], v3.rationale
    config = v3.parameters["table"][ONE_ROW]
    assert config_key(config) != config_key(first_one_row) and config != space.structure_config(ONE_ROW)
    losing = set(v1.parameters["class_patterns"][ONE_ROW]) - {
        p for k in v2.parameters["classes"] for p in v1.parameters["class_patterns"][k]}
    assert losing and not losing & set(v3.parameters["class_patterns"][ONE_ROW]), (losing, v3.rationale)
    assert first_one_row["gemv"] and _launches_tuned(space, ONE_ROW, first_one_row), first_one_row
    tiles = _tiles_one_row(space)
    assert not config["gemv"] and _is_gemv_or_tile_rule(config, tiles), (sorted(config.items()), v3.rationale[:200])


def _launches_tuned(space, key: str, config: dict) -> bool:
    """`config` launches what the tuned entry point launches on the class's case of widest M."""
    from kernels.splitk_gemm.common import Problem
    from kernels.splitk_gemm.config import FamilyConfig
    from kernels.splitk_gemm.family import plan_launch

    limits = ChipLimits(**space.limits)
    case = max((TASK.case(c) for c in space.class_cases(key)), key=lambda c: c.params["m"])
    m, n, k = (case.params[x] for x in "mnk")
    prob = Problem(m, n, k, torch.bfloat16)
    mine = plan_launch(FamilyConfig(**space.complete(config)), prob, limits)
    tuned = plan_launch(choose_config(limits, m, n, k, torch.bfloat16), prob, limits)
    # split_k 0 (sized per call) and the tuned rule's explicit count launch the same grid
    return replace(mine, config=replace(mine.config, split_k=0)) == replace(tuned, config=replace(tuned.config,
                                                                                                 split_k=0))


def test_every_class_gets_the_tuned_rule_within_its_first_three_configurations(setup, h200):
    """Every candidate rejected, every case 30 % slower than the baseline (the worst feedback): each class's third
    configuration at the latest launches what the tuned entry point launches (on its case of widest M): its top
    plan, the proposer's retry of the fastest configuration seen for it (all tie here), then the tuned rule."""
    space, retrieval, cases = setup
    baseline_us = {c.id: 100.0 for c in cases}
    proposer = PatternGuidedProposer(space)
    history: list[EvalRecord] = []
    seen: dict[str, list[dict]] = {k: [] for k in space.classes}
    notes = []
    for n in range(1, 2 + 3 * len(space.classes)):
        proposal = proposer.propose(_context(space, h200, retrieval, cases, n, "v0", {}, history, baseline_us,
                                             baseline_us))
        for key in proposal.parameters["classes"]:
            seen[key].append(proposal.parameters["table"][key])
        notes.append(proposal.rationale.split(". Diagnosis")[0])
        lineage = Lineage(id=f"v{n}", parent_id="v0", generation=1, proposer="offline", patterns=proposal.patterns,
                          parameters=proposal.parameters, content_hash=proposal.content_hash)
        record = EvalRecord(n=n, candidate_id=f"v{n}", parent_id="v0", proposer="offline", stage="pass",
                            passed=True, timed=True, accepted=False, decision="rejected: regressed",
                            time_us={c: 130.0 for c in CASES}, parameters=proposal.parameters,
                            content_hash=proposal.content_hash)
        proposer.observe(lineage, record)
        history.append(record)
    for key, configs in seen.items():
        assert any(_launches_tuned(space, key, c) for c in configs[:3]), (key, configs, "\n".join(notes))
    # its first plan is the GEMV rule's, which launches the tuned entry point's GEMV mode (the same tile and warps;
    # on the H200 the same stages)
    first = seen[ONE_ROW][0]
    assert all(first[k] == v for k, v in GEMV_TILE.items()) and _launches_tuned(space, ONE_ROW, first), first
