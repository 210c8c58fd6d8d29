"""`chiplore verify` through the typer app: exit codes, JSON verdicts, the untimed note on the CPU, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import agent.cli.pattern_cmds  # noqa: F401  a second command keeps typer in multi-command mode
import agent.cli.verify_cmds  # noqa: F401  registers `verify`
from agent.cli.app import app
from knowledge.errors import BadInputError

ROOT = Path(__file__).resolve().parents[3]
CHEAT = ROOT / "tests" / "verifier" / "cheats" / "torch_library.py"
HONEST = ROOT / "tests" / "verifier" / "honest" / "simple_triton.py"
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("chiplore_home")


def test_static_cheat_exits_2_with_a_json_verdict():
    result = runner.invoke(app, ["verify", "extend_attention", str(CHEAT), "--chip", "h200", "--json"])
    assert result.exit_code == 2, result.output
    verdict = json.loads(result.stdout)
    assert verdict["stage"] == "static_rejected" and verdict["timed"] is False
    assert any("no-torch-compute" in r for r in verdict["reasons"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU behaviour")
def test_honest_candidate_passes_and_says_nothing_was_timed():
    result = runner.invoke(app, ["verify", "extend_attention", str(HONEST), "--cases", "gqa-4,sinks"])
    assert result.exit_code == 0, result.output
    assert "pass" in result.stdout and "not timed: no GPU" in result.stdout
    result = runner.invoke(app, ["verify", "extend_attention", str(HONEST), "--cases", "gqa-4", "--json"])
    verdict = json.loads(result.stdout)
    assert verdict["stage"] == "pass" and verdict["time_us"] == {} and "gqa-4" in verdict["errors"]


@pytest.mark.parametrize("args, message", [
    (["verify", "extend_attention", "missing.py"], "no such file"),
    (["verify", "no_task", str(HONEST)], "unknown task"),
    (["verify", "extend_attention", str(HONEST), "--chip", "nochip"], "nochip"),
    (["verify", "extend_attention", str(HONEST), "--device", "tpu"], "--device"),
])
def test_bad_input_is_one_clear_error(args, message):
    result = runner.invoke(app, args)
    assert isinstance(result.exception, BadInputError) and message in str(result.exception)
