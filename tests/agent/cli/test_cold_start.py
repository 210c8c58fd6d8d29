"""What each command imports when it starts (the speed targets themselves are measured by
benchmarks/bench_cold_start.py): `--help` and `chips` load neither torch nor the embedding model, `ask` loads the
embedder (sentence-transformers) and the store, but not the verifier."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HEAVY = ("torch", "triton", "transformers", "sentence_transformers", "sklearn", "chromadb", "agent.verifier")
PROBE = """
import json, sys
from agent.cli.app import main
sys.argv = ["chiplore", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print("\\nIMPORTED " + json.dumps(sorted(m for m in HEAVY_MODULES if m in sys.modules)))
""".replace("HEAVY_MODULES", repr(HEAVY))


def imported(args, home):
    env = dict(os.environ, CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=300)
    line = next(x for x in out.stdout.splitlines() if x.startswith("IMPORTED "))
    return set(json.loads(line.removeprefix("IMPORTED ")))


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["optimize", "--help"], ["mcp", "--help"],
                                  ["--version"]])
def test_help_imports_nothing_heavy(args, tmp_path):
    assert imported(args, tmp_path) == set()


@pytest.mark.slow
def test_chips_opens_the_store_only(tmp_path):
    assert imported(["chips"], tmp_path) == {"chromadb"}


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_ask_loads_the_embedder_and_store_but_not_the_verifier(chiplore_home, docs):
    from ingest.onboard import onboard

    onboard("z9", [docs], progress=False)
    loaded = imported(["ask", "vector cores", "--chip", "z9"], chiplore_home)
    assert {"torch", "chromadb", "sentence_transformers"} <= loaded
    assert "agent.verifier" not in loaded


REGISTERED = """
import json, sys
from typer.main import get_command
from agent.cli.app import _register_commands, app
_register_commands(json.loads(sys.argv[1]))
print(json.dumps(sorted(get_command(app).commands)))
"""


@pytest.mark.parametrize("args", [["demo"], ["demo", "--max-evals", "1"]])
def test_demo_registers_the_commands_it_runs(args):
    """`chiplore demo` runs onboard, ask, patterns and optimize through the app: as the console script starts it
    (only the named command's module imported), every one of them must be registered."""
    out = subprocess.run([sys.executable, "-c", REGISTERED, json.dumps(args)], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert {"onboard", "ask", "patterns", "optimize", "demo"} <= set(json.loads(out.stdout.splitlines()[-1]))
