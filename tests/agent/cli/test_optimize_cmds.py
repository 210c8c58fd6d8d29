"""CLI: optimize / report / bench argument handling and the report command on a finished run."""

import json

import pytest
from typer.testing import CliRunner

import agent.cli.optimize_cmds  # noqa: F401  registers the commands
from agent.cli.app import app
from agent.config import OptimizeConfig, StopRules
from agent.errors import RunNotFoundError
from agent.session import run_optimization, start_run
from core.errors import BadInputError
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile

runner = CliRunner()


def test_optimize_needs_task_and_chip(chiplore_home):
    result = runner.invoke(app, ["optimize", "extend_attention"])
    assert isinstance(result.exception, BadInputError)
    assert str(result.exception) == "optimize needs TASK and --chip (or --resume RUN)"


def test_optimize_unknown_chip_and_task(chiplore_home):
    result = runner.invoke(app, ["optimize", "extend_attention", "--chip", "nochip"])
    assert isinstance(result.exception, BadInputError) and "unknown chip 'nochip'" in str(result.exception)
    result = runner.invoke(app, ["optimize", "softmax", "--chip", "h200"])
    assert isinstance(result.exception, BadInputError) and "unknown task 'softmax'" in str(result.exception)
    result = runner.invoke(app, ["optimize", "extend_attention", "--chip", "h200", "--cases", "decode,nope"])
    assert isinstance(result.exception, BadInputError) and "unknown case(s) nope for task" in str(result.exception)
    result = runner.invoke(app, ["optimize", "extend_attention", "--chip", "h200", "--llm-extra", "{bad"])
    assert isinstance(result.exception, BadInputError) and str(result.exception).startswith("--llm-extra: not JSON")


def test_resume_unknown_run(chiplore_home):
    result = runner.invoke(app, ["optimize", "--resume", "missing-run"])
    assert isinstance(result.exception, RunNotFoundError)
    assert str(result.exception).startswith("run 'missing-run' not found")


def test_bench_without_gpu_says_so(chiplore_home):
    result = runner.invoke(app, ["bench", "extend_attention", "--chip", "h200"])
    assert isinstance(result.exception, BadInputError) and "bench needs a GPU" in str(result.exception)


def test_report_command_on_a_finished_run(chiplore_home):
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=4))
    run, state = start_run(config, run_id="cli-report")
    run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())
    result = runner.invoke(app, ["report", "cli-report", "--json"])
    assert result.exit_code == 0, result.output
    paths = json.loads(result.output)
    assert paths["markdown"].endswith("cli-report/report/report.md")
    assert open(paths["speedup_png"], "rb").read(4) == b"\x89PNG"


@pytest.mark.parametrize("args", [["optimize", "--help"], ["report", "--help"], ["demo", "--help"]])
def test_help(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "Usage" in result.output
