"""The whole job on the CPU with every real component: onboard the shipped H200 note, optimize under the Triton
interpreter (correctness only) with the real verifier, retrieval, ranking and findings store, resume, report."""

import json

import pytest
from typer.testing import CliRunner

from agent.cli.app import _register_commands, app
from agent.runstate import RunDir
from hardware_profiles import load_profile

pytestmark = pytest.mark.slow
runner = CliRunner()


def _invoke(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_onboard_optimize_resume_report(chiplore_home, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the CPU path is what this test covers")
    from agent.demo import NOTES_DIR

    _register_commands()
    _invoke(["onboard", "h200", str(NOTES_DIR / "h200.md")])
    out = _invoke(["optimize", "extend_attention", "--chip", "h200", "--max-evals", "1", "--run-id", "e2e",
                   "--record-findings", "--no-report", "--json"])
    assert "No GPU on this machine" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "finished" and summary["evaluations"] == 1 and summary["timed"] is False
    assert summary["geomean_speedup"] is None
    run = RunDir.open("e2e")
    state = run.load_state()
    assert state.baseline.passed and state.evaluations[0].stage == "pass", state.evaluations[0].reasons
    log = run.read_retrieval(1)
    assert any(d["cite"].startswith("h200.md") for d in log["documents"])
    assert any(p["citations"] for ps in log["patterns"].values() for p in ps)
    verdict = run.read_verdict(1)
    assert verdict["timed"] is False and "not timed" in verdict["timing_note"]

    from knowledge.findings import query_findings
    found = query_findings(chip="h200", task="extend_attention")
    assert {f.id for f in found} == set(state.findings_recorded) and found
    assert all(f.run_id == "e2e" and f.verdict_stage == "pass" and not f.accepted for f in found)

    out = _invoke(["optimize", "--resume", "e2e", "--max-evals", "2", "--json"])
    state = RunDir.open("e2e").load_state()
    assert [e.n for e in state.evaluations] == [1, 2] and state.resumes == 1
    assert len(state.findings_recorded) == len(set(state.findings_recorded))
    paths = json.loads(_invoke(["report", "e2e", "--json"]))
    assert "Correctness-only run" in open(paths["markdown"]).read()
    assert load_profile("h200").get("num_compute_units") == 132


def test_demo_runs_every_job(chiplore_home):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the CPU demo is what this test covers")
    _register_commands(["demo", "--max-evals", "1"])  # as the console script registers them
    out = _invoke(["demo", "--max-evals", "1"])
    assert "onboarded h200" in out and "chiplore ask" in out and "chiplore patterns" in out
    assert "No GPU on this machine" in out and "1 of 1 candidates passed the verifier" in out
    state = RunDir.open(next((chiplore_home / "runs").iterdir()).name).load_state()
    assert state.config.retrieval and state.evaluations[0].stage == "pass"
