"""`chiplore profile show|diff|detect` through typer's test runner (the real app, real profiles)."""

from __future__ import annotations

import json
import re

import pytest
import torch
from typer.testing import CliRunner

import agent.cli.profile_cmds  # noqa: F401  registers the commands
from agent.cli.app import app
from agent.cli.profile_cmds import NARROW_COLUMNS
from core.errors import BadInputError
from hardware_profiles.device_query import NoDeviceError

runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path / "home"))


def test_show_table_lists_values_and_sources(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no source citation folds
    result = runner.invoke(app, ["profile", "show", "h200"])
    assert result.exit_code == 0, result.output
    assert "num_compute_units" in result.output and "132" in result.output
    assert "Hopper Tuning Guide" in result.output and "alt 50" in result.output
    assert re.search(r"tensor_memory_accelerator\s*│\s*true\s*│\s*bool", result.output), result.output


def test_show_json_round_trips_numbers():
    result = runner.invoke(app, ["profile", "show", "mi300x", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["num_compute_units"]["value"] == 304 and data["peak_tflops"]["bf16"]["value"] == 1307.4
    assert data["peak_tflops"]["tf32"]["kind"] == "conflict"
    assert data["max_threads_per_block"]["value"] is None
    assert data["tensor_memory_accelerator"] == {"value": None, "unit": "bool"}  # the documents do not say
    h200 = json.loads(runner.invoke(app, ["profile", "show", "h200", "--json"]).output)
    assert h200["tensor_memory_accelerator"]["value"] is True


def test_show_unknown_chip_is_a_one_line_error():
    result = runner.invoke(app, ["profile", "show", "nosuchchip"])
    assert result.exit_code != 0 and isinstance(result.exception, BadInputError)
    assert "unknown chip 'nosuchchip'" in str(result.exception)


def test_diff_reports_ratios():
    result = runner.invoke(app, ["profile", "diff", "h100", "h200"])
    assert result.exit_code == 0, result.output
    assert "mem_bw_gbps" in result.output and "1.43x" in result.output  # 4800 / 3350
    assert "num_compute_units" not in result.output  # both 132
    from agent.cli.profile_cmds import profile_differences
    from hardware_profiles import load_profile

    rows = profile_differences(load_profile("a100"), load_profile("h100"))  # a feature differs: no ratio
    assert ("tensor_memory_accelerator", "false [derived]", "true [stated]", "") in rows
    same = runner.invoke(app, ["profile", "diff", "h200", "h200"])
    assert "no differences" in same.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_detect_without_gpu_fails_clearly():
    result = runner.invoke(app, ["profile", "detect"])
    assert isinstance(result.exception, NoDeviceError)
    assert "no CUDA or ROCm device visible to torch" in str(result.exception)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm device")
def test_detect_on_gpu_saves_user_profile(tmp_path):
    result = runner.invoke(app, ["profile", "detect", "--as", "detected_gpu"])
    assert result.exit_code == 0, result.output
    from hardware_profiles import load_profile

    profile = load_profile("detected_gpu")
    assert profile.get("num_compute_units") == torch.cuda.get_device_properties(0).multi_processor_count
    assert profile.get("smem_per_block_kb") and profile.num_compute_units.kind == "device_query"


@pytest.mark.parametrize("args", [["profile", "show", "h200"], ["profile", "diff", "h100", "h200"]])
def test_non_utf8_user_profile_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch, args):
    from tests.agent.cli.cli_helpers import run_cli

    path = tmp_path / "home" / "profiles" / "h200.yaml"
    path.parent.mkdir(parents=True)
    garbage = bytes([0xED, 0x9F, 0xC0, 0xFF, 0x00, 0x81]) * 500
    path.write_bytes(garbage)
    code, out, err = run_cli(capsys, monkeypatch, *args)
    assert code == 1 and out == ""
    assert err == (f"error: {path}: not a profile YAML file: byte 0 is not UTF-8 text "
                   "(binary or corrupt; fix or delete the file)\n")
    assert path.read_bytes() == garbage


@pytest.mark.parametrize("columns", [80, 100, 160])
def test_show_follows_the_terminal_width(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    result = runner.invoke(app, ["profile", "show", "h200"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    file_line = next(line for line in lines if line.startswith("file: "))
    assert file_line.endswith("h200.yaml")  # the path is never broken, even when it is longer than the width
    references = [line for line in lines if re.match(r"\[\d+\] ", line)]  # citations are never broken either
    table_lines = [line for line in lines if not line.startswith("file: ") and line not in references
                   and not line.startswith("notes: ")]
    assert max(len(line) for line in table_lines) <= columns
    assert any(len(line) == columns for line in table_lines)  # the table uses the width it is given
    if columns < NARROW_COLUMNS:  # sources as numbered references under the table, one per distinct citation
        cited = {int(n) for line in table_lines for n in re.findall(r"\[(\d+)\]", line)}
        assert cited == set(range(1, len(references) + 1)) and len(references) > 5
        assert len(lines) < 80
    else:
        assert not references


def test_set_needs_a_citation_writes_the_user_profile_and_keeps_the_old_value():
    import hardware_profiles as hp

    result = runner.invoke(app, ["profile", "set", "zx40", "num_compute_units", "48"])
    assert result.exit_code != 0 and "--source" in result.output  # no citation, no value
    assert "zx40" not in hp.known_chips()
    result = runner.invoke(app, ["profile", "set", "zx40", "smem_per_block_kb", "64 KB", "--source",
                                 "ZX-40 datasheet, Specifications", "--quote", "Scratchpad per workgroup (max) | 64 KB"])
    assert result.exit_code == 0, result.output
    field = hp.load_profile("zx40").smem_per_block_kb
    assert (field.value, field.kind, field.source.document) == (64, "stated", "ZX-40 datasheet, Specifications")
    assert field.source.quote == "Scratchpad per workgroup (max) | 64 KB"
    result = runner.invoke(app, ["profile", "set", "zx40", "smem_per_block_kb", "96", "--source", "probe run 3"])
    assert result.exit_code == 0 and "kept as an alternative" in result.output
    field = hp.load_profile("zx40").smem_per_block_kb
    assert field.value == 96 and field.kind == "conflict" and {a.value for a in field.alternatives} == {64, 96}
    assert hp.load_profile("h200").get("num_compute_units") == 132  # packaged profile untouched


@pytest.mark.parametrize(("args", "message"), [
    (["nosuchfield", "1"], "not a profile field"),
    (["mem_bw_gbps", "64 KB"], "is bytes, but mem_bw_gbps is in GB/s"),
    (["warp_size", "many"], "is not a number"),
    (["tensor_memory_accelerator", "maybe"], "true or false"),
])
def test_set_bad_input_is_one_line(args, message):
    result = runner.invoke(app, ["profile", "set", "zx40", *args, "--source", "x"])
    assert result.exit_code != 0 and isinstance(result.exception, BadInputError)
    assert message in str(result.exception) and "\n" not in str(result.exception)


def test_set_reads_units_and_peaks():
    import hardware_profiles as hp

    for args in (["mem_bw_gbps", "2.4 TB/s"], ["peak_tflops.bf16", "400 TFLOPS"], ["mem_capacity_gb", "64 GB"],
                 ["tensor_memory_accelerator", "false"]):
        assert runner.invoke(app, ["profile", "set", "zx41", *args, "--source", "datasheet"]).exit_code == 0
    p = hp.load_profile("zx41")
    assert p.get("mem_bw_gbps") == pytest.approx(2400) and p.peak_tflops["bf16"].value == 400
    assert p.get("mem_capacity_gb") == pytest.approx(64e9 / 2**30) and p.get("tensor_memory_accelerator") is False


@pytest.mark.parametrize("value", ["-3", "-0.5", "-.5"])
def test_set_negative_value_reaches_the_commands_check(value, capsys, monkeypatch):
    from tests.agent.cli.cli_helpers import run_cli

    code, out, err = run_cli(capsys, monkeypatch, "profile", "set", "zx40", "num_compute_units", value,
                             "--source", "x")
    assert code == 1 and err.strip() == (f"error: profile set: {value!r} is negative; num_compute_units (count) "
                                          "is never below 0")
    code, out, err = run_cli(capsys, monkeypatch, "profile", "set", "zx40", "num_compute_units", value, "--sourc", "x")
    assert code == 1 and "No such option: --sourc" in err  # a typo is still click's error, naming the typo
    code, out, err = run_cli(capsys, monkeypatch, "profile", "set", "zx40", "num_compute_units", "3",
                             "--source", "-3 dB table")  # an option's value may start with '-'
    assert code == 0, err


def test_show_conflict_lists_only_the_other_values(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert runner.invoke(app, ["profile", "set", "h200", "num_compute_units", "140", "--source", "made up"]
                         ).exit_code == 0
    output = runner.invoke(app, ["profile", "show", "h200"]).output
    rows = [line for line in output.splitlines() if "alt " in line or "num_compute_units" in line]
    assert re.search(r"num_compute_units\s*│\s*140\s*│.*conflict", output), output
    assert "alt 132" in output and "alt 140" not in output, rows
    assert "alt 60" not in output and "alt 50" in output  # packaged l2 conflict: 60 shown, 50 the alternative


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("clock_mhz", "12abc", "is not a number with a unit for clock_mhz (MHz)"),
    ("warp_size", "0", "is not a positive whole number; warp_size (threads) is a count"),
    ("l2_cache_mb", "1e400", "is not a finite number for l2_cache_mb (MiB)"),
])
def test_set_refused_value_is_one_line_and_leaves_the_profile_file_as_it_was(field, value, problem, capsys,
                                                                             monkeypatch):
    import hardware_profiles as hp
    from tests.agent.cli.cli_helpers import run_cli

    assert run_cli(capsys, monkeypatch, "profile", "set", "zx40", "num_compute_units", "48", "--source", "x")[0] == 0
    path = hp.profile_path("zx40")
    before = path.read_bytes()
    code, out, err = run_cli(capsys, monkeypatch, "profile", "set", "zx40", field, value, "--source", "x, p.1")
    assert code == 1 and err.strip() == f"error: profile set: {value!r} {problem}"
    assert path.read_bytes() == before
