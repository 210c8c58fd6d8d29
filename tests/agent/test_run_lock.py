"""One process per run: a live run's ``--resume`` is refused naming its pid, a dead run's lock is taken over, and
a save never writes a state older than the one on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.config import OptimizeConfig, StopRules
from agent.errors import RunBusyError, RunConflictError
from agent.runstate import RunDir
from agent.session import resume_run, start_run

REPO = Path(__file__).resolve().parents[2]


def _live_run(root: Path) -> subprocess.Popen:
    """A real process running run ``run`` under `root`, stopped inside the verification of candidate 2."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HANG_AT": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.agent.kill_driver", str(root), "run", "start"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while not (root / "verifying").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc


@pytest.mark.slow
def test_resume_of_a_live_run_is_refused_and_a_dead_runs_lock_is_taken_over(tmp_path):
    proc = _live_run(tmp_path)
    state_file = tmp_path / "runs" / "run" / "state.json"
    try:
        before = state_file.read_bytes()
        with pytest.raises(RunBusyError, match=f"run 'run' is running in pid {proc.pid}"):
            resume_run("run", root=tmp_path / "runs")
        env = {**os.environ, "PYTHONPATH": str(REPO), "CHIPLORE_HOME": str(tmp_path)}
        cli = subprocess.run([sys.executable, "-m", "agent.cli", "optimize", "--resume", "run"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
        lines = cli.stderr.strip().splitlines()
        assert cli.returncode == 1 and len(lines) == 1, cli.stderr
        assert lines[0].startswith(f"error: run 'run' is running in pid {proc.pid} (since "), lines[0]
        assert state_file.read_bytes() == before  # nothing was written by the refused resumes
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    run, state = resume_run("run", root=tmp_path / "runs")  # the dead process's lock is free: taken over
    assert state.resumes == 1
    run.unlock()


def test_a_save_never_goes_back_to_an_older_state(tmp_path):
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=2))
    run, state = start_run(config, run_id="r", root=tmp_path)
    run.unlock()
    other = RunDir(run.path)  # another process's view, read now
    theirs = other.load_state()
    state.status = "finished"
    run.save_state(state)  # this process saves on
    theirs.status = "stopped"
    with pytest.raises(RunConflictError, match="state.json was saved by another process after this one read it"):
        other.save_state(theirs)
    assert RunDir(run.path).load_state().status == "finished"
