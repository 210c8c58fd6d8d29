"""Resume after SIGKILL (real subprocess) and after a crash between verdict and record."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.config import OptimizeConfig, StopRules
from agent.runstate import RunDir
from agent.session import resume_run, run_optimization, start_run
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile
from tests.agent.kill_driver import MAX_EVALS

REPO = Path(__file__).resolve().parents[2]


def _driver(root: Path, mode: str, hang_at: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HANG_AT", None)
    if hang_at:
        env["HANG_AT"] = hang_at
    return subprocess.Popen([sys.executable, "-m", "tests.agent.kill_driver", str(root), "run", mode], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finding_ids(root: Path) -> list[str]:
    return [f["id"] for f in json.loads((root / "findings.json").read_text())]


@pytest.mark.slow  # ~19 s on 2 cores
def test_sigkill_mid_evaluation_then_resume(tmp_path):
    ref_root, kill_root = tmp_path / "ref", tmp_path / "kill"
    ref_root.mkdir(), kill_root.mkdir()
    ref = _driver(ref_root, "start")
    assert ref.wait(timeout=120) == 0, ref.stdout.read()
    proc = _driver(kill_root, "start", hang_at="4")
    deadline = time.monotonic() + 120
    while not (kill_root / "verifying").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    killed = RunDir(kill_root / "runs" / "run").load_state()
    assert killed.pending is not None and killed.pending.n == 4 and len(killed.evaluations) == 3
    assert killed.status == "running"  # SIGKILL: no chance to write anything else
    resumed = _driver(kill_root, "resume")
    assert resumed.wait(timeout=120) == 0, resumed.stdout.read()

    a = RunDir(ref_root / "runs" / "run").load_state()
    b = RunDir(kill_root / "runs" / "run").load_state()
    assert b.status == "finished" and b.resumes == 1 and b.pending is None
    assert [e.n for e in b.evaluations] == list(range(1, MAX_EVALS + 1))
    assert [e.content_hash for e in b.evaluations] == [e.content_hash for e in a.evaluations]
    assert [e.accepted for e in b.evaluations] == [e.accepted for e in a.evaluations]
    # the killed evaluation was verified again after resume; nothing else was repeated
    calls = (kill_root / "calls-resume.txt").read_text().split()
    assert calls == [f"kernel_v{n}.py" for n in range(4, MAX_EVALS + 1)]
    # findings: same ids as the uninterrupted run, none duplicated
    assert sorted(_finding_ids(kill_root)) == sorted(_finding_ids(ref_root))
    assert len(b.findings_recorded) == len(set(b.findings_recorded)) == len(a.findings_recorded)


class _Crash(BaseException):
    pass


def test_crash_after_verdict_resumes_without_reverifying(tmp_path):
    knowledge = ScriptedKnowledge()
    calls = {"n": 0}
    original = knowledge.record_finding

    def crash_on_third(finding):
        if finding.id.endswith(("-v3-decode", "-v3-prefill", "-v3-mla", "-v3-large-heads")) and calls["n"] == 0:
            calls["n"] += 1
            raise _Crash()
        return original(finding)

    knowledge.record_finding = crash_on_third
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=5))
    run, state = start_run(config, run_id="crash", root=tmp_path)
    verifier = ScriptedVerifier()
    with pytest.raises(_Crash):
        run_optimization(run, state, h200_profile(), verifier, knowledge)
    saved = run.load_state()
    assert saved.pending.n == 3 and run.read_verdict(3) is not None and saved.status == "stopped"
    run2, state2 = resume_run("crash", root=tmp_path)
    verifier2 = ScriptedVerifier()
    final = run_optimization(run2, state2, h200_profile(), verifier2, knowledge)
    assert "kernel_v3.py" not in verifier2.calls and verifier2.calls[0] == "kernel_v4.py"
    assert [e.n for e in final.evaluations] == [1, 2, 3, 4, 5]
    assert len(final.findings_recorded) == len(set(final.findings_recorded))


def test_resume_extends_limits_and_rejects_unknown_run(tmp_path):
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=2))
    run, state = start_run(config, run_id="short", root=tmp_path)
    state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())
    assert len(state.evaluations) == 2 and state.stop_kind == "max_evals"
    run, state = resume_run("short", root=tmp_path, max_evals=4)
    state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())
    assert [e.n for e in state.evaluations] == [1, 2, 3, 4]
    run, state = resume_run("short", root=tmp_path, max_evals=6, patience=9)
    assert (state.config.stop.max_evals, state.config.stop.patience) == (6, 9)
    assert run.load_state().config.stop.patience == 9  # saved: a later resume without it keeps 9
    run.unlock()
    from agent.errors import RunNotFoundError
    with pytest.raises(RunNotFoundError, match="run 'nope' not found"):
        resume_run("nope", root=tmp_path)
