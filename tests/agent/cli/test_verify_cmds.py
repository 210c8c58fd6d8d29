"""`chiplore verify` through the typer app: exit codes, JSON verdicts, the untimed note on the CPU, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import agent.cli.pattern_cmds  # noqa: F401  a second command keeps typer in multi-command mode
import agent.cli.verify_cmds  # noqa: F401  registers `verify`
from agent.cli.app import app
from core.errors import BadInputError

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


@pytest.mark.slow  # ~37 s on 2 cores
@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU behaviour")
@pytest.mark.parametrize("name", ["simple_triton", "family_nosplit_nopack"])
def test_kernels_without_the_optional_tail_or_with_kwargs_pass(name):
    """simple_triton declares SGLang 0.5.23's signature up to ``sinks``; family_nosplit_nopack the required
    parameters and ``**kwargs``: every call of the verifier binds to both."""
    path = ROOT / "tests" / "verifier" / "honest" / f"{name}.py"
    result = runner.invoke(app, ["verify", "extend_attention", str(path), "--chip", "h200", "--cases",
                                 "kv-scales,indices-tail,sinks"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # ~20 s on the 2-core machine
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


TEST_IDS = ("zero-lengths, decode-long-prefix, shorter-than-tile, gqa-1, gqa-4, gqa-7, head-dim-13, head-dim-80, "
            "head-dim-96, qk192-v128, mla-576-512, sliding-window, logit-cap-huge, sinks, custom-mask, "
            "custom-mask-prefix, non-causal, loose-max-len, sm-scale, fp32-inputs, window-and-mask, kv-scales, "
            "indices-tail")
BENCH_IDS = "prefill, chunked-prefill, mixed-batch, spec-verify, decode, ragged, small-heads, large-heads, mla"
ON_THIS_DEVICE = (f"on a GPU the verifier checks the bench cases: {BENCH_IDS}" if torch.cuda.is_available() else
                  f"on the CPU the verifier checks the test cases: {TEST_IDS} (bench cases need a GPU)")
OTHER_KIND = ("--cases gqa-4: test case, checked only on the CPU (--device cpu)" if torch.cuda.is_available() else
              "--cases prefill: bench case, checked only on a GPU")


@pytest.mark.parametrize("options, line", [
    (["--reps", "0"], "--reps 0: must be >= 3"),
    (["--reps", "-1"], "--reps -1: must be >= 3"),
    (["--timeout", "0"], "--timeout 0: must be > 0 seconds"),
    (["--timeout", "-5"], "--timeout -5: must be > 0 seconds"),
    (["--timeout", "inf"], "--timeout inf: must be a finite number of seconds"),
    (["--cases", "nosuchcase"], f"--cases nosuchcase: unknown case for task 'extend_attention'; {ON_THIS_DEVICE}"),
    (["--cases", "gqa-4,nosuch,prefill"],
     f"--cases nosuch: unknown case for task 'extend_attention'; {ON_THIS_DEVICE}"),
    (["--cases", "gqa-4" if torch.cuda.is_available() else "prefill"], f"{OTHER_KIND}; {ON_THIS_DEVICE}"),
])
def test_bad_option_is_one_line_exit_1(capsys, monkeypatch, options, line):
    from tests.agent.cli.cli_helpers import run_cli

    code, out, err = run_cli(capsys, monkeypatch, "verify", "extend_attention", HONEST, *options)
    assert (code, out, err) == (1, "", f"error: {line}\n")


def test_a_directory_is_not_a_candidate_file(tmp_path, capsys, monkeypatch):
    from tests.agent.cli.cli_helpers import run_cli

    code, out, err = run_cli(capsys, monkeypatch, "verify", "extend_attention", tmp_path)
    assert (code, out) == (1, "")
    assert err == (f"error: candidate file {tmp_path}: is a directory; give the kernel file (a .py file defining "
                   "the task's entry point)\n")


@pytest.mark.parametrize("name, data, problem", [
    ("kernel.py", b"def f():\n    return 1\n\xa2\xff" + os.urandom(64), "byte 22 is not UTF-8 text"),
    ("logo.png", b"\x89PNG\r\n\x1a\n" + os.urandom(64), "byte 0 is not UTF-8 text"),
    ("zeros.py", b"x = 1\n" + bytes(64), "byte 6 is a NUL byte"),
], ids=["random-tail", "png", "nul-bytes"])
def test_a_binary_file_is_one_line_exit_1(tmp_path, capsys, monkeypatch, name, data, problem):
    """Random bytes, an image, a file of NUL bytes: one line naming the file, no codec message, exit 1."""
    from tests.agent.cli.cli_helpers import run_cli

    path = tmp_path / name
    path.write_bytes(data)
    code, out, err = run_cli(capsys, monkeypatch, "verify", "extend_attention", path)
    assert (code, out) == (1, "")
    assert err == f"error: candidate file {path}: not a text (UTF-8) Python file: {problem} (binary or corrupt)\n"


@pytest.mark.parametrize("errors, shown", [({}, False), ({"gqa-4": {"case_id": "gqa-4"}}, False),
                                           ({"gqa-4": {"case_id": "gqa-4", "trials": 1, "elements": 8}}, True)])
def test_errors_section_only_when_it_has_rows(errors, shown):
    from rich.console import Console

    from agent.cli.verify_cmds import _print_verdict
    from agent.verifier import Verdict

    verdict = Verdict.model_validate({"stage": "mismatch", "reasons": ["case gqa-4: 8/8 elements outside"],
                                      "errors": errors, "task": "extend_attention", "candidate": "k.py",
                                      "candidate_sha256": "0"})
    console = Console(record=True, width=120, file=open(os.devnull, "w"))
    _print_verdict(verdict, console)
    text = console.export_text()
    assert any(line.strip().startswith("errors (") for line in text.splitlines()) is shown, text
    assert ("gqa-4 " in text) is shown, text
