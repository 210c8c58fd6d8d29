"""`chiplore patterns` and `chiplore findings` through the typer app (real catalog, profiles, store)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import agent.cli.pattern_cmds  # noqa: F401  registers the commands
from agent.cli.app import app
from core.errors import BadInputError

pytestmark = pytest.mark.usefixtures("chiplore_home")
ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def _json(args):
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_patterns_for_m890_spec_verify():
    doc = _json(["patterns", "--chip", "m890", "--case", "spec-verify"])
    assert doc["chip"] == "m890" and doc["case"] == "spec-verify"
    assert doc["patterns"][0]["applicable"]
    # 512 programs are 14 waves on 36 units: the family's split rule keeps one split (knowledge/test_ranking.py);
    # the public run on this chip still sets the knob value and is the pattern's evidence
    split = next(p for p in doc["patterns"] if p["pattern_id"] == "split_kv")
    assert not split["applicable"] and split["parameters"]["num_splits"] == 1 and split["knobs"] == {"num_splits": 4}
    assert split["evidence"][0]["chip"] == "m890" and "Public run" in split["evidence"][0]["citation"]
    tiles = next(p for p in doc["patterns"] if p["pattern_id"] == "tile_sizing")
    assert tiles["parameters"]["footprint_kb"] <= 48
    warps = next(p for p in doc["patterns"] if p["pattern_id"] == "warp_count")
    assert warps["knobs"] == {"num_warps": None}  # m890's warp size is unknown
    assert {b["id"] for b in doc["bottlenecks"]} >= {"memory-bound", "occupancy"}


def test_patterns_for_every_bench_case_and_catalog():
    doc = _json(["patterns", "--chip", "h200"])
    assert [c["case"] for c in doc["cases"]][:2] == ["prefill", "chunked-prefill"] and len(doc["cases"]) == 9
    cat = _json(["patterns"])
    catalog = yaml.safe_load((ROOT / "kernels" / "extend_attention" / "catalog.yaml").read_text())
    assert [p["id"] for p in cat["patterns"]] and cat["patterns"][0]["id"] == "split_kv"
    assert {p["id"] for p in cat["patterns"]} == {p["id"] for p in catalog["patterns"]}
    text = runner.invoke(app, ["patterns", "--chip", "m890", "--case", "spec-verify"])
    assert text.exit_code == 0 and "split_kv" in text.stdout and "num_splits=4" in text.stdout


@pytest.mark.parametrize("args, names", [
    (["patterns", "--chip", "m999"], ["unknown chip", "m890", "h200"]),
    (["patterns", "--chip", "h200", "--case", "spec-verfy"], ["unknown case", "spec-verify", "decode"]),
    (["patterns", "--task", "gemm"], ["unknown task", "extend_attention"]),
    (["findings", "--pattern", "split-kv"], ["unknown pattern", "split_kv"]),
])
def test_unknown_inputs_name_the_known_ones(args, names):
    result = runner.invoke(app, args)
    assert isinstance(result.exception, BadInputError)
    for name in names:
        assert name in str(result.exception)


def test_findings_lists_recorded_findings():
    from knowledge.findings import Finding, record_finding

    record_finding(Finding(chip="h200", task="extend_attention", case_id="decode", case_class="decode",
                           patterns=("split_kv",), parameters={"num_splits": 2}, verdict_stage="runtime_error",
                           verdict_id="v1", run_id="r1", date="2026-11-30"))
    doc = _json(["findings", "--chip", "h200"])
    assert len(doc["findings"]) == 1 and doc["findings"][0]["status"] == "failed"
    assert _json(["findings", "--chip", "m890"])["findings"] == []  # known chip, nothing recorded
    text = runner.invoke(app, ["findings"])
    assert "runtime_error" in text.stdout and "split_kv" in text.stdout
    result = runner.invoke(app, ["findings", "--chip", "m999"])
    assert isinstance(result.exception, BadInputError)
    assert "unknown chip 'm999'" in str(result.exception) and "mi300x" in str(result.exception)


@pytest.mark.slow
def test_cli_prints_one_error_line_and_exits_1(chiplore_home):
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "patterns", "--chip", "m999"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown chip 'm999'")


def test_case_without_chip_is_an_error_not_ignored(capsys, monkeypatch):
    from hardware_profiles import known_chips
    from tests.agent.cli.cli_helpers import run_cli

    code, out, err = run_cli(capsys, monkeypatch, "patterns", "--case", "spec-verify")
    assert (code, out) == (1, "")
    assert known_chips()[:2] == ["a100", "h100"]
    assert err == (f"error: --case spec-verify: ranking for a case needs --chip (one of {', '.join(known_chips())}); "
                   "without --chip the catalog is listed for the whole task\n")
    code, _, err = run_cli(capsys, monkeypatch, "patterns", "--case", "nosuch")
    assert code == 1 and err.startswith("error: unknown case 'nosuch' for task 'extend_attention'; known: prefill, ")


def test_chip_with_documents_but_no_profile(chiplore_home, embedder, tmp_path, capsys, monkeypatch):
    """A chip whose documents gave no profile facts: findings knows it (none yet), patterns says what it needs."""
    from tests.agent.cli.cli_helpers import run_cli

    doc = tmp_path / "zeta.md"
    doc.write_text("# Zeta notes\n\nThe Zeta accelerator is described here in prose without a single figure.\n")
    code, _, _ = run_cli(capsys, monkeypatch, "onboard", "zeta", doc)
    assert code == 0 and not (chiplore_home / "profiles" / "zeta.yaml").exists()
    code, out, _ = run_cli(capsys, monkeypatch, "findings", "--chip", "zeta")
    assert (code, out.strip()) == (0, "Findings on zeta: 0")
    code, out, err = run_cli(capsys, monkeypatch, "patterns", "--chip", "zeta")
    assert (code, out) == (1, "")
    assert err == ("error: no hardware profile for chip 'zeta': its 1 onboarded document(s) gave no profile facts; "
                   "ranking needs one: run `chiplore profile detect --as zeta` on the device, or write "
                   "$CHIPLORE_HOME/profiles/zeta.yaml (format: `chiplore profile show h200 --json`)\n")
    code, out, err = run_cli(capsys, monkeypatch, "findings", "--chip", "nope")
    assert (code, out) == (1, "")
    assert err == ("error: unknown chip 'nope': no profile, documents or findings for it; profiles: a100, h100, "
                   "h200, m890, mi300x; chips with findings: none\n")


def test_gains_are_labelled_modeled_measured_or_quoted(embedder, capsys, monkeypatch):
    """Expected gains are modeled; a public example's step gain is a modeled share of the total it quotes (10x);
    a finding's gain is measured. The --json keys of before are all still there, with `basis` and `quoted_total`."""
    from knowledge.findings import Finding, record_finding
    from tests.agent.cli.cli_helpers import run_cli

    record_finding(Finding(chip="h200", task="extend_attention", case_id="decode", case_class="decode",
                           patterns=("split_kv",), parameters={"num_splits": 8}, baseline_time_us=100.0,
                           candidate_time_us=40.0, verdict_stage="pass", verdict_id="v1", run_id="r1",
                           date="2026-11-30", accepted=True))
    code, out, _ = run_cli(capsys, monkeypatch, "patterns", "--chip", "h200", "--case", "decode", "--json")
    split = next(p for p in json.loads(out)["patterns"] if p["pattern_id"] == "split_kv")
    assert code == 0 and {"expected_gain", "prior_gain", "evidence", "knobs", "score"} <= set(split)
    by_basis = {e["basis"]: e for e in split["evidence"]}
    assert set(by_basis) == {"measured", "public_example"}
    assert by_basis["measured"]["quoted_total"] is None and by_basis["public_example"]["quoted_total"] == 10.0
    assert by_basis["measured"]["log_gain"] == pytest.approx(math.log(2.5))

    code, out, _ = run_cli(capsys, monkeypatch, "patterns", "--chip", "h200", "--case", "decode")
    text = " ".join(out.split())
    assert code == 0
    assert (f"split_kv: {split['name']}; modeled gain {split['expected_gain']:.3g}x (prior "
            f"{split['prior_gain']:.3g}x from the chip profile, with the evidence below)") in text
    assert "evidence [finding on h200, weight 1.00: measured 2.50x]: " in text
    share = math.exp(by_basis["public_example"]["log_gain"])
    weight = by_basis["public_example"]["weight"]
    assert (f"evidence [public example on m890, weight {weight:.2f}: modeled share {share:.2f}x of the quoted 10x "
            "total]: Public run") in text
    code, out, _ = run_cli(capsys, monkeypatch, "patterns", "--chip", "h200")
    assert code == 0 and "top patterns per bench case (modeled gain, knobs)" in " ".join(out.split())
    assert " modeled " in out.split("decode:")[1].splitlines()[0]


def test_ranked_listing_explains_its_marks_only_when_they_appear(monkeypatch):
    from agent.cli.pattern_cmds import LEGEND, NOT_APPLICABLE, _fmt, legend

    monkeypatch.setenv("COLUMNS", "200")
    detailed = runner.invoke(app, ["patterns", "--chip", "h200", "--case", "decode"])
    assert detailed.exit_code == 0, detailed.output
    lines = detailed.output.splitlines()
    assert any(line.startswith(NOT_APPLICABLE) for line in lines)  # h200 decode: some requires precondition fails
    assert LEGEND[NOT_APPLICABLE] in lines
    summary = runner.invoke(app, ["patterns", "--chip", "h200"])
    assert summary.exit_code == 0 and "?" not in summary.output and not any(
        text in summary.output for text in LEGEND.values())
    assert legend(f"{_fmt(None)} block_m=16") == [LEGEND["?"]]  # a gain the model cannot give: "modeled ?x"
