"""`chiplore optimize` / `report` on bad input, through the real CLI: an unavailable LLM proposer fails before a
run folder exists, corrupt run files and a missing best kernel give one line naming the file, the "run not found"
message lists recent runs with their status. Runs are made by the real loop with the scripted verifier."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli.optimize_cmds  # noqa: F401  registers the commands
from agent.cli.app import app
from agent.config import OptimizeConfig, StopRules
from agent.errors import ProposerConfigError, RunCorruptError, RunNotFoundError
from agent.runstate import RunDir
from agent.session import run_optimization, start_run
from core.errors import BadInputError
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile
from tests.agent.llm_server import ScriptedChatServer

ROOT = Path(__file__).resolve().parents[3]
LLM_ENV = ("CHIPLORE_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")
runner = CliRunner()


def _cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m agent.cli ARGS` in a fresh process (what a user runs), without any LLM settings of this shell."""
    base = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    base.update(CHIPLORE_HOME=str(home), PYTHONPATH=str(ROOT), TRITON_INTERPRET="1", **env)
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=ROOT, env=base, capture_output=True,
                          text=True, timeout=300)


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def _finished_run(run_id: str = "done") -> RunDir:
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=3))
    run, state = start_run(config, run_id=run_id)
    state = run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())
    assert state.best_id != "v0"  # the scripted model always finds a faster kernel in three tries
    return run


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----- 1. the LLM proposer cannot be used: one line, exit 1, no run folder


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_llm_proposer_without_model_fails_before_a_run_folder(chiplore_home):
    proc = _cli(chiplore_home, "optimize", "extend_attention", "--chip", "h200", "--proposer", "llm")
    line = _one_error_line(proc)
    assert "--proposer llm: no model configured; set CHIPLORE_MODEL" in line
    assert not (chiplore_home / "runs").exists() or not any((chiplore_home / "runs").iterdir())


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_llm_endpoint_unreachable_fails_before_a_run_folder(chiplore_home):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    proc = _cli(chiplore_home, "optimize", "extend_attention", "--chip", "h200", "--proposer", "llm",
                CHIPLORE_MODEL="m", OPENAI_BASE_URL=url)
    line = _one_error_line(proc)
    assert f"LLM endpoint {url}" in line and "is unreachable" in line and "OPENAI_BASE_URL" in line
    assert not (chiplore_home / "runs").exists() or not any((chiplore_home / "runs").iterdir())


def test_llm_endpoint_refusing_the_key_fails_before_a_run_folder(chiplore_home, monkeypatch):
    with ScriptedChatServer(["never sent"], api_key="right-key") as server:
        monkeypatch.setenv("CHIPLORE_MODEL", "scripted-model")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
        result = runner.invoke(app, ["optimize", "extend_attention", "--chip", "h200", "--proposer", "llm"])
        assert isinstance(result.exception, ProposerConfigError)
        assert "refused the API key (HTTP 401); set OPENAI_API_KEY" in str(result.exception)
        assert [r["path"] for r in server.requests] == ["/v1/models"]  # checked, nothing proposed
        assert not (chiplore_home / "runs").exists() or not any((chiplore_home / "runs").iterdir())
        # the right key passes the check (the run itself is covered by test_llm_proposer)
        from agent.config import LLMOptions
        from agent.proposers.llm import LLMProposer

        monkeypatch.setenv("OPENAI_API_KEY", "right-key")
        LLMProposer(LLMOptions()).check()


# ----- 2. corrupt run state: one line naming the file and the problem


def _truncate(text: str) -> bytes:
    return text[: len(text) // 2].encode()


def _edit(**changes):
    def edit(text: str) -> bytes:
        data = json.loads(text)
        for key, value in changes.items():
            if value is None:
                data.pop(key)
            else:
                data[key] = value
        return json.dumps(data).encode()
    return edit


CORRUPTIONS = {
    "truncated": (_truncate, "not JSON: "),
    "empty": (lambda text: b"", "(empty file)"),
    "binary": (lambda text: b"\xff\xfe\x00\x81garbage", "(not UTF-8 text)"),
    "list": (lambda text: b"[1, 2]", "(a JSON list, expected an object)"),
    "no-version": (_edit(version=None), "(no version field)"),
    "missing-config": (_edit(config=None), "(config: Field required)"),
    "bad-evaluations": (_edit(evaluations="many"), "(evaluations: Input should be a valid list)"),
    "bad-best-id": (_edit(best_id="../../x"), "(best_id: String should match pattern"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_state_is_one_clear_error(chiplore_home, kind):
    run = _finished_run()
    corrupt, detail = CORRUPTIONS[kind]
    run.state_path.write_bytes(corrupt(run.state_path.read_text()))
    for args in (["report", "done"], ["optimize", "--resume", "done"]):
        result = runner.invoke(app, args)
        assert isinstance(result.exception, RunCorruptError), (args, result.exception)
        message = str(result.exception)
        assert message.startswith("run 'done': state.json is corrupt or not a chiplore run state ("), message
        assert detail in message and str(run.path) in message and "\n" not in message
    assert not (run.path / "report").exists()


@pytest.mark.slow
def test_corrupt_state_through_the_console_script(chiplore_home):
    run = _finished_run()
    run.state_path.write_bytes(_truncate(run.state_path.read_text()))
    for args in (["report", "done"], ["optimize", "--resume", "done"]):
        line = _one_error_line(_cli(chiplore_home, *args))
        assert line.startswith("error: run 'done': state.json is corrupt") and "not JSON" in line


def test_state_of_a_newer_chiplore(chiplore_home):
    run = _finished_run()
    run.state_path.write_bytes(_edit(version=99)(run.state_path.read_text()))
    result = runner.invoke(app, ["report", "done"])
    assert type(result.exception) is BadInputError
    assert "state.json has run state version 99" in str(result.exception) and "upgrade chiplore" in str(
        result.exception)


def test_corrupt_lineage_of_the_best_kernel(chiplore_home):
    run = _finished_run()
    best = run.load_state().best_id
    run.lineage_path(int(best[1:])).write_text('{"id": "v1", "parent')
    result = runner.invoke(app, ["report", "done"])
    assert isinstance(result.exception, RunCorruptError)
    assert str(result.exception).startswith(f"run 'done': kernel_{best}.json is corrupt (not JSON: ")


# ----- 3. the best kernel file is missing


def test_missing_best_kernel(chiplore_home):
    run = _finished_run()
    state = run.load_state()
    run.candidate_path(int(state.best_id[1:])).unlink()
    expected = (f"run 'done': the best kernel kernel_{state.best_id}.py is missing (state.json names "
                f"{state.best_id} as the best kernel); folder {run.path}")
    for args in (["report", "done"], ["optimize", "--resume", "done"]):
        result = runner.invoke(app, args)
        assert isinstance(result.exception, RunCorruptError) and str(result.exception) == expected, args
    assert not (run.path / "report").exists()
    assert run.load_state().resumes == 0  # the failed resume saved nothing


def test_report_of_a_run_without_baseline(chiplore_home):
    config = OptimizeConfig(task="extend_attention", chip="h200")
    start_run(config, run_id="fresh")
    result = runner.invoke(app, ["report", "fresh"])
    assert type(result.exception) is BadInputError
    assert "nothing to report yet, its baseline was never verified" in str(result.exception)


# ----- 4. recent runs are listed by id and status


def test_run_not_found_lists_recent_runs_with_status(chiplore_home):
    _finished_run("done")
    broken = _finished_run("broken")
    broken.state_path.write_text("{")
    os.utime(broken.state_path, (2e9, 2e9))  # the most recently updated
    result = runner.invoke(app, ["optimize", "--resume", "missing"])
    assert isinstance(result.exception, RunNotFoundError)
    assert str(result.exception) == ("run 'missing' not found (no state.json); recent runs: "
                                     "done (finished, 3 evaluations), broken (unreadable state.json)")
