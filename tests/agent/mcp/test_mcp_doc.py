"""docs/MCP.md's Python client, extracted from the document and run as written against the real `chiplore mcp`
(stdio, the mcp SDK's client), so that the example cannot drift from the SDK or the server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.mcp.server import TOOL_NAMES, one_line
from tests.agent.mcp import test_mcp_server as served
from tests.agent.mcp.test_mcp_server import chiplore_exe

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "MCP.md"
SECTION = "## A Python client over stdio (`mcp` SDK 2.x)"
#: The store of tests/agent/mcp/test_mcp_server.py: the shipped H200 note onboarded by the real CLI.
onboarded_home = served.onboarded_home

pytestmark = pytest.mark.slow  # the module's store is onboarded by a cold CLI (about 10 s), then two cold processes


def _blocks() -> tuple[str, list[str]]:
    """The section's ```python block and the lines of the ```text block after it (the output it shows)."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC}: no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert code and shown, f"{DOC}: the section lacks its python or text block"
    return code.group(1), shown.group(1).splitlines()


def _env(home: Path) -> dict[str, str]:
    """The environment of a user whose virtual environment is active: its ``chiplore`` first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPLORE_")}
    env.update(CHIPLORE_HOME=str(home), PATH=os.pathsep.join([str(Path(chiplore_exe()).parent), env["PATH"]]))
    return env


def _unknown_chip_line(home: Path, monkeypatch) -> str:
    """The tool error get_profile must give for an unknown chip: the server's one line of the error that
    `hardware_profiles.load_profile` raises here, in this process, for the same CHIPLORE_HOME."""
    from core.errors import ChiploreError
    from hardware_profiles import load_profile

    monkeypatch.setenv("CHIPLORE_HOME", str(home))
    with pytest.raises(ChiploreError) as exc:
        load_profile("no-such-chip")
    return one_line(f"get_profile: {exc.value}")


def test_the_documented_client_runs_and_prints_what_the_document_shows(onboarded_home, tmp_path, monkeypatch):
    code, shown = _blocks()
    script = tmp_path / "client.py"
    script.write_text(code, encoding="utf-8")
    env = _env(onboarded_home)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = proc.stdout.splitlines()
    assert len(printed) == len(shown) == 4, proc.stdout

    assert printed[0] == shown[0] == f"tools: {', '.join(TOOL_NAMES)}"

    ask = subprocess.run([chiplore_exe(), "ask", "shared memory per block", "--chip", "h200", "-k", "2", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert ask.returncode == 0, ask.stderr
    assert printed[1:3] == [f"[{h['rank']}] {h['citation']}" for h in json.loads(ask.stdout)["hits"]]
    assert all(re.fullmatch(r"\[\d\] h200\.md > .+", line) for line in shown[1:3]), shown

    error = _unknown_chip_line(onboarded_home, monkeypatch)
    assert printed[3] == f"is_error: True | {error}"
    assert shown[3] == printed[3].replace(str(onboarded_home), "~/.chiplore")
