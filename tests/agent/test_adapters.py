"""The seams bound to the real modules that are installed: profiles, pattern ranking, findings conversion."""

import pytest

from agent.adapters import RealVerifier, StoreKnowledge, load_chip_profile
from agent.context import gather
from agent.diagnosis import diagnose
from agent.family_space import FamilySpace
from agent.proposers.base import ProposalContext
from agent.proposers.offline import PatternGuidedProposer
from kernels.extend_attention.spec import TASK
from tests.agent.helpers import BASELINE_US


def test_packaged_h200_profile_has_what_the_loop_needs():
    p = load_chip_profile("h200")
    assert p.get("num_compute_units") == 132 and p.get("smem_per_block_kb") == 227
    assert p.peak_flops("bf16") and p.peak_bytes_per_s()


class _RankingOnly(StoreKnowledge):
    """Real ranking; documents and findings are another branch's (knowledge.store) and not needed here."""

    def search_documents(self, query, chip, k):
        return []

    def query_findings(self, chip, task, k):
        return []


def test_real_ranking_drives_the_first_plan(chiplore_home):
    import inspect

    from kernels.extend_attention import baseline

    profile = load_chip_profile("h200")
    knowledge = _RankingOnly(profile)
    cases = list(TASK.bench_cases)
    diagnoses = diagnose(TASK, cases, profile, BASELINE_US)
    ctx_retrieved = gather(knowledge, TASK, profile, "h200", cases, diagnoses, docs_k=0, findings_k=0)
    decode = ctx_retrieved.patterns["decode"]
    assert decode and all(p.citations for p in decode)
    space = FamilySpace(TASK, profile, cases)
    ctx = ProposalContext(
        n=1, run_id="r", chip="h200", task=TASK, profile=profile, cases=cases, space=space,
        signature=inspect.signature(baseline.extend_attention_fwd), diagnoses=diagnoses, retrieval=ctx_retrieved,
        best_id="v0", best_source="", best_lineage=None, best_table=space.full_table({}),
        best_time_us=dict(BASELINE_US), baseline_time_us=dict(BASELINE_US), noise={}, last_verdict=None,
        history=[], rng=__import__("random").Random(0), timed=True)
    proposal = PatternGuidedProposer(space).propose(ctx)
    memory = proposal.parameters["table"]["memory-d128"]
    # the ranked knobs for decode/spec-verify (multi-query blocks: GQA packing with small row blocks) are applied
    wanted = {k: v for p in decode if p.applicable for k, v in p.knobs.items()}
    assert memory["pack_gqa"] is True and memory["block_m"] == space.snap("block_m", wanted["block_m"])
    assert set(proposal.parameters["classes"]) == set(space.classes) and proposal.patterns
    # the H200 has a bulk tensor-copy engine: compute-bound classes get a contiguous prefix and TMA loads (modeled
    # gain > 1); decode/spec-verify would pay a copy pass larger than their attention time (gain < 1): not applied
    table, per_class = proposal.parameters["table"], proposal.parameters["class_patterns"]
    for key in ("compute-d128", "compute-d256", "compute-wide"):
        assert table[key]["pregather"] is True and table[key]["tma"] is True, key
        assert "pregather_tma" in per_class[key]
    assert memory["pregather"] is False and memory["tma"] is False
    assert "pregather_tma" not in per_class["memory-d128"]
    assert "FamilyConfig(" in proposal.source and "pregather=True, tma=True" in proposal.source


def test_real_verifier_options_mapping():
    from agent.verifier import VerifyOptions
    from core.errors import BadInputError

    v = RealVerifier()
    gpu = v.options({"cases": ["decode", "mla"], "timing": True, "baseline_time_us": {"decode": 8285.0},
                     "reps": 10})
    assert gpu == VerifyOptions(case_ids=("decode", "mla"), timing=True, baseline_time_us={"decode": 8285.0},
                                reps=10)
    cpu = v.options({"cases": ["decode"], "timing": False})
    assert cpu.timing is False and cpu.case_ids == ()  # correctness-only runs keep the test and hidden cases
    with pytest.raises(BadInputError, match="verify options"):
        v.options({"cases": [], "timing": True, "no_such_option": 1})
