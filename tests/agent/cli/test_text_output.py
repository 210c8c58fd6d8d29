"""What `chiplore ask` and `onboard` print: document text as text (never Rich markup or emoji codes), citations on
one line, and a quiet exit 0 when the reader of stdout goes away (``| head -1``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.cli.cli_helpers import run_cli

REPO = Path(__file__).resolve().parents[3]
MARKUP = "Mode rw:x:ro, see :warning: and [bold red]not bold[/bold red] or [link=file:///etc/passwd]x[/link]."


def test_document_markup_and_emoji_codes_are_printed_literally(chiplore_home, embedder, tmp_path, capsys,
                                                                monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "perm.md").write_text(f"# Page [b]tables[/b]\n\n{MARKUP}\n")
    (docs / ":x: notes\nsecond line.md").write_text("# Notes\n\nThe Z9 scratchpad holds 192 KiB.\n")
    code, out, err = run_cli(capsys, monkeypatch, "onboard", "z9", docs)
    assert code == 0, err
    code, out, err = run_cli(capsys, monkeypatch, "ask", "rw permissions warning", "--chip", "z9", "-k", "2")
    assert code == 0, err
    assert MARKUP in out and "[b]tables[/b]" in out
    assert "\u274c" not in out and "\u26a0" not in out  # no emoji: ❌ for :x:, ⚠ for :warning:
    citations = [line for line in out.splitlines() if line.startswith("[")]
    assert len(citations) == 2 and any(line.startswith("[1] perm.md > Page [b]tables[/b]") for line in citations)
    assert any(":x: notes\\nsecond line.md > Notes" in line for line in citations), citations


@pytest.mark.slow  # ~11 s on the 2-core machine
def test_a_closed_stdout_ends_quietly_with_exit_0(chiplore_home, embedder, docs, capsys, monkeypatch):
    code, _, err = run_cli(capsys, monkeypatch, "onboard", "z9", docs)
    assert code == 0, err
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(chiplore_home))
    proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "ask", "vector cores", "-k", "5"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is printed, as `| head -1` after its first line
    _, err = proc.communicate(timeout=300)
    assert (proc.returncode, err.decode()) == (0, "")
    shell = subprocess.run(f"{sys.executable} -m agent.cli ask 'vector cores' -k 5 | head -1", shell=True, cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=300)
    assert shell.stdout.startswith("[1] ") and shell.stdout.count("\n") == 1 and shell.stderr == ""


@pytest.mark.slow
def test_a_closed_stdout_keeps_verifys_rejection_code(tmp_path):
    """`chiplore verify k.py | head -1` under `set -o pipefail`: the rejection (exit 2) survives the reader going
    away; the pipe is closed before the verdict is printed, so printing it fails with EPIPE."""
    env = dict(os.environ, CHIPLORE_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    cheat = REPO / "tests" / "verifier" / "splitk_gemm_cheats" / "torch_matmul.py"
    proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "verify", "splitk_gemm", str(cheat), "--device", "cpu"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err.decode()[-2000:]
