"""The loop on the real knowledge base (chromadb store, hybrid retrieval, ranking on the pattern graph, findings)
with the scripted verifier: what one run records is what the next run retrieves and starts from."""

import pytest

from agent.adapters import StoreKnowledge, load_chip_profile
from agent.config import OptimizeConfig, StopRules
from agent.demo import NOTES_DIR
from agent.session import run_optimization, start_run
from tests.agent.helpers import ScriptedVerifier


@pytest.mark.slow  # ~66 s on 2 cores
def test_findings_of_one_run_seed_the_next(chiplore_home):
    from ingest.onboard import onboard
    from knowledge.findings import query_findings

    onboard("h200", [NOTES_DIR / "h200.md"])
    profile = load_chip_profile("h200")
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=6))
    run1, state1 = start_run(config, run_id="first")
    state1 = run_optimization(run1, state1, profile, ScriptedVerifier(), StoreKnowledge(profile))
    log = run1.read_retrieval(1)
    assert log["documents"] and all(d["cite"].startswith("h200.md") for d in log["documents"])
    assert log["findings"] == []
    stored = query_findings(chip="h200", task="extend_attention")
    assert {f.id for f in stored} == set(state1.findings_recorded)
    accepted = [f for f in stored if f.accepted]
    assert accepted and all(f.speedup > 1 and f.verdict_stage == "pass" for f in accepted)
    assert all(f.parameters["dispatch_class"] for f in stored)

    run2, state2 = start_run(config, run_id="second")
    state2 = run_optimization(run2, state2, profile, ScriptedVerifier(), StoreKnowledge(profile))
    log2 = run2.read_retrieval(1)
    assert log2["findings"] and log2["findings"][0]["metadata"]["chip"] == "h200"
    first = run2.read_lineage(1)
    assert "verified x" in first.rationale and "finding" in first.rationale
    # the second run starts where the first ended: its first candidate is the first run's best kernel (every case
    # class at the fastest configuration the first run verified) ...
    best1 = state1.best_record()
    assert first.parameters["table"] == run1.read_lineage(best1.n).parameters["table"]
    # ... so it measures the same, up to the scripted timing noise (+-jitter per case, on both measurements)
    jitter = ScriptedVerifier().jitter
    assert state2.evaluations[0].geomean_speedup >= best1.geomean_speedup * (1 - 2 * jitter)
