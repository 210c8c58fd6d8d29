"""The pattern graph: typed nodes and edges from the catalog, evidence from findings, crash-safe persistence."""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core.errors import StoreError
from knowledge.catalog import load_catalog
from knowledge.findings import Finding
from knowledge.graph import EDGE_TYPES, GRAPH_VERSION, NODE_TYPES, PatternGraph

pytestmark = pytest.mark.usefixtures("chiplore_home")

ROOT = Path(__file__).resolve().parents[2]


def _finding(i: int, speedup: float = 2.0, stage: str = "pass", accepted: bool = True) -> dict:
    f = Finding(chip="h100", task="extend_attention", case_id="spec-verify", case_class="small-extend",
                patterns=("split_kv", "multi_query_blocks"), parameters={"num_splits": 4, "block_m": 16},
                baseline_time_us=100.0 * speedup if stage == "pass" else None,
                candidate_time_us=100.0 if stage == "pass" else None, verdict_stage=stage,
                verdict_id=f"v{i}", run_id="run-a", date="2026-11-30", accepted=accepted)
    return f.record({"num_compute_units": 132.0, "smem_per_block_kb": 227.0, "bw_per_flop": 0.0034,
                     "warp_size": 32.0})


def test_build_has_every_node_and_edge_type():
    g = PatternGraph.build(load_catalog(), [_finding(0), _finding(1, stage="compile_error", accepted=False)])
    stats = g.stats()
    for t in NODE_TYPES:
        assert stats[f"nodes.{t}"] > 0, t
    for t in EDGE_TYPES:
        assert stats[f"edges.{t}"] > 0, t
    assert "occupancy" in g.related("split_kv", "addresses")
    assert {"extend_attention/grid", "extend_attention/tiles", "extend_attention/split"} <= set(
        g.related("split_kv", "requires"))
    assert "compute_units" in g.related("split_kv", "requires")
    assert "persistent_grid" in g.related("split_kv", "conflicts_with")
    assert "multi_query_blocks" in g.related("split_kv", "composes_with")
    split, tiles = "parameter_rule:extend_attention/split", "parameter_rule:extend_attention/tiles"
    assert (split, tiles, "requires") in g.graph.edges(keys=True)


def test_finding_evidence_edges_and_gain_shared_between_patterns():
    g = PatternGraph.build(load_catalog(), [_finding(0, speedup=4.0)])
    ev = [e for e in g.evidence("split_kv") if e.kind == "finding"]
    assert len(ev) == 1 and ev[0].supports
    assert ev[0].log_gain == pytest.approx(0.5 * math.log(4.0))  # two patterns share ln 4
    g.add_finding(_finding(1, stage="mismatch", accepted=False))
    failed_id = _finding(1, stage="mismatch", accepted=False)["id"]
    failed = [e for e in g.evidence("multi_query_blocks") if e.source_id == failed_id]
    assert failed[0].supports is False and failed[0].log_gain == 0.0
    g.add_finding(_finding(0, speedup=4.0))  # idempotent
    assert len(g.nodes_of("finding")) == 2


def test_save_load_roundtrip(tmp_path):
    path = tmp_path / "graph.json"
    g = PatternGraph.build(load_catalog(), [_finding(i) for i in range(5)])
    g.save(path)
    back = PatternGraph.load(path)
    assert back.stats() == g.stats()
    assert back.to_json()["payload_sha256"] == g.to_json()["payload_sha256"]
    assert json.loads(path.read_text())["version"] == GRAPH_VERSION


def test_truncated_or_tampered_file_is_rebuilt(tmp_path):
    path = tmp_path / "graph.json"
    PatternGraph.build(load_catalog(), [_finding(0)]).save(path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    g = PatternGraph.load(path)
    assert g.stats()["nodes.pattern"] == len(load_catalog().patterns) and g.stats()["nodes.finding"] == 0
    assert PatternGraph.load(path).stats() == g.stats()  # the rebuilt file is valid
    doc = json.loads(path.read_text())
    doc["payload"]["nodes"][0]["type"] = "tampered"
    path.write_text(json.dumps(doc))
    assert PatternGraph.load(path).stats() == g.stats()


def test_other_catalog_rebuilds_and_keeps_findings(tmp_path):
    path = tmp_path / "graph.json"
    g = PatternGraph.build(load_catalog(), [_finding(0), _finding(1)])
    g.catalog_sha256 = "an-older-catalog"
    g.save(path)
    back = PatternGraph.load(path)
    assert back.catalog_sha256 == load_catalog().sha256
    assert back.finding_ids() == g.finding_ids()


def test_unwritable_location_still_loads(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the graph folder should be")
    g = PatternGraph.load(blocker / "graph.json")  # rebuilt in memory, saving skipped
    assert g.stats()["nodes.pattern"] == len(load_catalog().patterns)
    with pytest.raises(StoreError, match="cannot write"):
        g.save(blocker / "graph.json")
    assert blocker.read_text().startswith("a file")


def test_newer_version_is_an_error(tmp_path):
    path = tmp_path / "graph.json"
    PatternGraph.build(load_catalog()).save(path)
    doc = json.loads(path.read_text())
    doc["version"] = GRAPH_VERSION + 1
    path.write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="newer chiplore"):
        PatternGraph.load(path)


_CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from knowledge.catalog import load_catalog
    from knowledge.graph import PatternGraph
    from tests.knowledge.test_graph import _finding

    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    g = PatternGraph.load(path, load_catalog())
    start = len(g.finding_ids())
    for i in range(start, start + n):
        g.add_finding(_finding(i))
    die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    if mode == "before-replace":   # temp file written and synced, rename not done
        os.replace = die
    elif mode == "before-fsync":   # temp file written, not synced
        os.fsync = die
    print("saving", start + n, flush=True)
    if mode == "loop":
        while True:
            g.add_finding(_finding(len(g.finding_ids())))
            g.save(path)
            print("saved", len(g.finding_ids()), flush=True)
    g.save(path)
    print("saved", len(g.finding_ids()), flush=True)
""")


def _child(tmp_path: Path, path: Path, mode: str, n: int) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(root=str(ROOT)))
    return subprocess.Popen([sys.executable, str(script), str(path), mode, str(n)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("mode", ["before-replace", pytest.param("before-fsync", marks=pytest.mark.slow)])
def test_sigkill_while_saving_keeps_the_previous_graph(tmp_path, mode):
    path = tmp_path / "graph.json"
    PatternGraph.build(load_catalog(), [_finding(i) for i in range(3)]).save(path)
    before = path.read_bytes()
    proc = _child(tmp_path, path, mode, 400)
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert list(tmp_path.glob(".graph.json.*.tmp")), "the writer died with its temp file on disk"
    assert path.read_bytes() == before
    g = PatternGraph.load(path)
    assert len(g.finding_ids()) == 3
    assert not list(tmp_path.glob(".graph.json.*.tmp")), "stale temp file removed on load"


@pytest.mark.slow  # ~16 s on a busy 2-core machine
def test_sigkill_at_random_times_leaves_a_loadable_graph(tmp_path):
    """Kill a writer that saves a growing graph in a loop at different moments: the file always loads and holds
    the last save the writer reported (or the one after it, if the rename landed before the report)."""
    path = tmp_path / "graph.json"
    PatternGraph.build(load_catalog()).save(path)
    for trial in range(3):
        proc = _child(tmp_path, path, "loop", 1500)
        assert proc.stdout.readline().startswith("saving")
        for _ in range(1 + trial):
            assert proc.stdout.readline().startswith("saved")
        time.sleep(0.017 * (trial + 1))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        reported = [int(x.split()[1]) for x in rest.splitlines() if x.startswith("saved")]
        g = PatternGraph.load(path)
        assert g.stats()["nodes.pattern"] == len(load_catalog().patterns)
        if reported:
            assert reported[-1] <= len(g.finding_ids()) <= reported[-1] + 1


def _gemm_finding(i: int, speedup: float) -> dict:
    f = Finding(chip="h200", task="splitk_gemm", case_id="m1-n4096-k14336", case_class="decode",
                patterns=("split_kv",), parameters={"split_k": 0, "block_m": 16},
                baseline_time_us=100.0 * speedup, candidate_time_us=100.0, verdict_stage="pass",
                verdict_id=f"g{i}", run_id="run-g", date="2026-12-01", accepted=True)
    return f.record({"num_compute_units": 132.0, "smem_per_block_kb": 227.0, "bw_per_flop": 0.0034,
                     "warp_size": 32.0})


def test_split_k_is_one_pattern_node_applied_to_both_tasks_with_their_own_rules():
    """split_kv names split-K too: each task applies it with its own rules and knob (extend attention: the prefix
    split, num_splits; GEMM: the K split, split_k), and a finding of either task is evidence on the one node."""
    catalog = load_catalog()
    applied = {task: catalog.pattern("split_kv", task) for task in ("extend_attention", "splitk_gemm")}
    assert set(applied["extend_attention"].knobs) == {"num_splits"} and set(applied["splitk_gemm"].knobs) == {"split_k"}
    assert {"grid", "tiles", "split"} <= set(applied["extend_attention"].rules)
    assert set(applied["splitk_gemm"].rules) == {"gemm_tiles", "gemm_split"}
    g = PatternGraph.build(catalog, [_finding(0, speedup=4.0), _gemm_finding(0, speedup=3.0)])
    assert {"extend_attention/split", "splitk_gemm/gemm_split"} <= set(g.related("split_kv", "requires"))
    evidence = [e for e in g.evidence("split_kv") if e.kind == "finding"]
    assert {e.task for e in evidence} == {"extend_attention", "splitk_gemm"} and all(e.supports for e in evidence)
    gemm = [e for e in g.evidence("split_kv", task="splitk_gemm") if e.kind == "finding"]
    assert len(gemm) == 1 and gemm[0].log_gain == pytest.approx(math.log(3.0))  # one pattern: the whole ln 3
