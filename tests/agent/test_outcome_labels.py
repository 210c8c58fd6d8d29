"""Honest labels for evaluations and findings: only a verified, timed candidate gets a speed figure; a pass where
nothing was timed says so, a verification failure (even one whose verdict carries times, e.g. too fast to be true)
says so with its stage. Records and findings come from the real `agent.outcomes`; the listing from the real
`chiplore findings` on a real store."""

from rich.console import Console
from typer.testing import CliRunner

import agent.cli.pattern_cmds  # noqa: F401  registers the commands
from agent.acceptance import Decision
from agent.cli.app import app
from agent.cli.optimize_view import evaluation_line
from agent.config import OptimizeConfig
from agent.outcomes import evaluation_record, failed_proposal_record, findings_for
from agent.runstate import BaselineRecord, Lineage, RunState

CASES = ["decode", "prefill"]
BASE = {"decode": 100.0, "prefill": 200.0}
FLOORS = {"decode": 10.0, "prefill": 20.0}


def _record(verdict, decision=None, n=1):
    lineage = Lineage(id=f"v{n}", parent_id="v0", generation=1, proposer="offline", patterns=["split_kv"],
                      content_hash=f"hash{n}", target_cases=list(CASES))
    return evaluation_record(n, lineage, verdict, decision, BASE, FLOORS, 0.1, CASES)


def _plain(markup: str) -> str:
    console = Console(width=400, record=True)
    console.print(markup)
    return console.export_text().strip()


def _state():
    state = RunState(run_id="r", config=OptimizeConfig(task="extend_attention", chip="h200"))
    state.baseline = BaselineRecord(stage="pass", passed=True, timed=True, time_us=BASE)
    return state


ACCEPTED = _record({"stage": "pass", "time_us": {"decode": 50.0, "prefill": 100.0}},
                   Decision(accepted=True, reason="x2.00 over the best"))
ROLLED_BACK = _record({"stage": "pass", "time_us": {"decode": 101.0, "prefill": 202.0}},
                      Decision(accepted=False, reason="not faster beyond noise"), n=2)
UNTIMED = _record({"stage": "pass", "time_us": {}}, n=3)
TOO_FAST = _record({"stage": "too_fast_to_be_true", "time_us": {"decode": 1.0, "prefill": 2.0},
                    "reasons": ["decode ran in 1.0 us, under its roofline floor of 10.0 us"]}, n=4)
NO_CODE = failed_proposal_record(5, "v0", "llm", "no_code", "the reply has no code block")


def test_progress_lines():
    assert _plain(evaluation_line(ACCEPTED)) == "v1 ACCEPTED geomean x2.00: x2.00 over the best"
    assert _plain(evaluation_line(ROLLED_BACK)).startswith("v2 rejected geomean x0.99: not faster beyond noise")
    line = _plain(evaluation_line(UNTIMED))
    assert line.startswith("v3 passed, not timed: verified correct") and "geomean" not in line
    line = _plain(evaluation_line(TOO_FAST))
    assert line == "v4 failed verification (too_fast_to_be_true): decode ran in 1.0 us, under its roofline floor of " \
                   "10.0 us"
    assert _plain(evaluation_line(NO_CODE)) == "v5 failed candidate (no_code): the reply has no code block"


def test_a_failed_candidate_has_no_speed_figure():
    assert TOO_FAST.time_us and not TOO_FAST.speedup and not TOO_FAST.roofline_fraction
    assert TOO_FAST.geomean_speedup is None and not TOO_FAST.timed


def test_finding_status_and_figures():
    state = _state()
    classes = {c: "memory" for c in CASES}
    by_record = {r.candidate_id: findings_for(state, r, classes, {}) for r in (ACCEPTED, ROLLED_BACK, UNTIMED,
                                                                               TOO_FAST)}
    assert {f.status for f in by_record["v1"]} == {"accepted"} and by_record["v1"][0].speedup == 2.0
    assert {f.status for f in by_record["v2"]} == {"rejected"} and by_record["v2"][0].speedup is not None
    for n, status in (("v3", "untimed"), ("v4", "failed")):
        for f in by_record[n]:
            assert f.status == status and f.speedup is None and f.candidate_time_us is None
            assert f.roofline_fraction is None


def test_findings_listing_labels(chiplore_home):
    from knowledge.findings import Finding, record_finding

    base = dict(chip="h200", task="extend_attention", case_class="memory", patterns=("split_kv",),
                run_id="r", date="2026-01-02T00:00:00+00:00", baseline_time_us=100.0)
    record_finding(Finding(id="f-acc", case_id="decode", verdict_stage="pass", verdict_id="r/v1",
                           candidate_time_us=50.0, accepted=True, **base))
    record_finding(Finding(id="f-untimed", case_id="prefill", verdict_stage="pass", verdict_id="r/v3", **base))
    # a failure whose verdict was timed (as older runs recorded it): still no speed figure in the listing
    record_finding(Finding(id="f-fail", case_id="decode", verdict_stage="too_fast_to_be_true", verdict_id="r/v4",
                           candidate_time_us=1.0, **base))
    result = CliRunner().invoke(app, ["findings", "--chip", "h200"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the console wraps long lines
    assert "decode split_kv 2.00x accepted id f-acc" in text
    assert "prefill split_kv - passed, not timed id f-untimed" in text
    assert "decode split_kv - failed verification (too_fast_to_be_true) id f-fail" in text
    assert "100.00x" not in text
