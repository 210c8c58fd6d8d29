"""The root command: `--version`, and help that shows flags without a value placeholder."""

from __future__ import annotations

import importlib

import pytest
from typer.testing import CliRunner

from agent.cli.app import _register_commands, app

app_module = importlib.import_module("agent.cli.app")  # `agent.cli.app` as an attribute is the Typer app

_register_commands()
runner = CliRunner()


def test_version_prints_the_installed_distribution_version(monkeypatch):
    monkeypatch.setattr(app_module, "version", lambda name: {"chiplore": "9.8.7"}[name])
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == "chiplore 9.8.7\n"


def test_version_from_a_source_checkout_still_exits_0(monkeypatch):
    def missing(name):
        raise app_module.PackageNotFoundError(name)

    monkeypatch.setattr(app_module, "version", missing)
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("chiplore unknown (not installed")


@pytest.mark.parametrize("command, flags", [(["verify"], ["--json", "--with-baseline", "--help"]),
                                            (["profile", "detect"], ["--dry-run", "--help"]),
                                            (["profile", "show"], ["--json"]),
                                            ([], ["--version", "--help"])])
def test_flags_show_no_value_placeholder(monkeypatch, command, flags):
    monkeypatch.setenv("COLUMNS", "150")
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    for flag in flags:
        line = next(line for line in result.output.splitlines() if f" {flag} " in line)
        assert line.split(flag, 1)[1].split()[0] not in ("<bool>", "BOOLEAN"), line
    if command == ["verify"]:
        assert "<int>" in result.output  # options that take a value still show its type


def test_optimize_help_names_the_chip_option():
    result = runner.invoke(app, ["optimize", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "chip C" not in result.output and "Optimize TASK for the chip named by --chip" in result.output


def test_usage_errors_exit_1_so_that_2_always_means_a_rejected_kernel(capsys, monkeypatch):
    from tests.agent.cli.cli_helpers import run_cli

    for args in (["verify", "kernels/extend_attention/baseline.py"],  # the FILE argument is missing
                 ["verify", "extend_attention", "kernels/extend_attention/baseline.py", "--bogus"],
                 ["verify", "extend_attention", "kernels/extend_attention/baseline.py", "--timeout", "abc"]):
        code, _, err = run_cli(capsys, monkeypatch, *args)
        assert code == 1, (args, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err  # one line, no usage block
        assert err.rstrip().endswith("(see 'chiplore verify --help')"), err
    code, _, err = run_cli(capsys, monkeypatch, "verify", "extend_attention", "k.py", "--timeout", "abc")
    assert "'--timeout'" in err and ("integer" in err or "number" in err), err  # names the option and the problem
    code, out, _ = run_cli(capsys, monkeypatch, "--help")
    assert code == 0 and "verify" in out



@pytest.mark.parametrize("command", ["onboard", "store", "optimize", "store check", "profile set"])
def test_help_is_readable_at_80_columns(command, capsys, monkeypatch):
    """At 80 columns every option description has at least 30 columns, and the command's prose is wrapped to the
    width: within a paragraph no line stops short (< 60 characters) of the margin while the paragraph goes on."""
    from tests.agent.cli.cli_helpers import run_cli

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, monkeypatch, *command.split(), "--help")
    assert code == 0
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    first_panel = next(i for i, line in enumerate(lines) if line.rstrip().endswith(":") and not line[0].isspace())
    prose = lines[1:first_panel]
    for this, following in zip(prose, prose[1:]):
        assert not (this.strip() and following.strip()) or len(this) >= 60, (this, out)
    rows = [line for line in lines[first_panel:] if line.startswith("  ") and line.strip()]
    for line in rows:  # an option or argument row, or a continuation: its description column
        name, gap, description = line.strip().partition("  ")
        text = description.lstrip() if gap else line.lstrip()
        if not gap and not line.startswith(" " * 10):
            continue  # an option name on a line of its own (its description follows on the next line)
        assert 80 - line.index(text) >= 30, (line, out)
