"""Findings memory with the real chromadb store and real all-MiniLM-L6-v2 embeddings (temp CHIPLORE_HOME)."""

import dataclasses
import math

import pytest

from core.errors import BadInputError
from knowledge.findings import Finding, load_graph, query_findings, record_finding
from knowledge.graph import PatternGraph
from knowledge.ranking import rank_patterns
from knowledge.store import KnowledgeStore
from tests.knowledge.chips import h100, h200


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("chiplore_home")


@pytest.fixture()
def store(home, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(home))
    return KnowledgeStore.open(home=home)


def _finding(**kw):
    base = dict(chip="h200", task="extend_attention", case_id="spec-verify", case_class="small-extend",
                patterns=("split_kv", "multi_query_blocks"), parameters={"num_splits": 4, "block_m": 16,
                                                                           "pack_gqa": True},
                baseline_time_us=4187.0, candidate_time_us=262.0, roofline_fraction=0.86, verdict_stage="pass",
                verdict_id="v12", run_id="run-1", date="2026-11-30", accepted=True)
    base.update(kw)
    return Finding(**base)


def test_record_stores_a_citable_chunk_and_graph_evidence_idempotently(store, home):
    f = _finding()
    assert f.speedup == pytest.approx(4187.0 / 262.0)
    fid = record_finding(f, h200(), store=store)
    assert fid == f.id and len(fid) == 24
    recs = store.records("findings", chip="h200")
    assert len(recs) == 1
    rec = recs[0]
    assert rec.id == f"finding-{fid}"
    assert "split_kv + multi_query_blocks" in rec.text and "15.98x" in rec.text and "86.0%" in rec.text
    assert rec.metadata["source"] == "findings/run-1" and rec.metadata["section"] == "extend_attention > spec-verify"
    assert rec.metadata["status"] == "accepted" and rec.metadata["patterns"] == "split_kv,multi_query_blocks"
    record_finding(f, h200(), store=store)  # same finding again: stored once
    assert len(store.records("findings", chip="h200")) == 1
    graph = PatternGraph.load(home / "graph" / "pattern_graph.json")
    ev = [e for e in graph.evidence("split_kv") if e.kind == "finding"]
    assert len(ev) == 1 and ev[0].supports and ev[0].log_gain == pytest.approx(math.log(f.speedup) / 2)
    assert ev[0].chip_features["num_compute_units"] == 132


def test_failed_attempts_are_kept_and_marked(store):
    f = _finding(verdict_stage="compile_error", verdict_id="v13", baseline_time_us=None, candidate_time_us=None,
                 roofline_fraction=None, accepted=False, patterns=("tile_sizing",),
                 parameters={"block_m": 128, "block_n": 128, "num_stages": 4}, notes="out of resources")
    record_finding(f, h200(), store=store)
    assert f.status == "failed"
    text = next(r.text for r in store.records("findings") if r.id == f"finding-{f.id}")
    assert "failed verification at stage compile_error" in text and "out of resources" in text
    ev = next(e for e in load_graph(store).evidence("tile_sizing") if e.source_id == f.id)
    assert ev.supports is False and ev.log_gain == 0.0


def test_query_by_chip_task_case_class_and_pattern(store):
    record_finding(_finding(chip="h100", verdict_id="v20", run_id="run-2", case_id="decode", case_class="decode",
                            patterns=("software_pipelining",), parameters={"num_stages": 3},
                            baseline_time_us=8285.0, candidate_time_us=600.0, roofline_fraction=None),
                   h100(), store=store)
    assert {f.chip for f in query_findings(store=store)} == {"h200", "h100"}
    assert [f.case_id for f in query_findings(chip="h100", store=store)] == ["decode"]
    assert [f.case_id for f in query_findings(chip="H100", store=store)] == ["decode"]  # case-insensitive
    assert all(f.case_class == "small-extend" for f in query_findings(case_class="small-extend", store=store))
    assert [f.verdict_id for f in query_findings(pattern="software_pipelining", store=store)] == ["v20"]
    assert query_findings(task="other_task", store=store) == []
    failed = query_findings(pattern="tile_sizing", store=store)
    assert len(failed) == 1 and failed[0].status == "failed"


def test_ask_can_retrieve_and_cite_a_finding(store):
    question = "what happened with software pipelining num_stages on the h100 decode case"
    hits = store.query(store.embedder.embed([question])[0], collection="findings", k=3)
    top, _ = hits[0]
    assert "software_pipelining" in top.text and top.metadata["chip"] == "h100"
    assert top.metadata["source"] == "findings/run-2" and top.metadata["section"] == "extend_attention > decode"


def test_a_finding_stored_before_a_crash_reaches_the_graph(store, home, monkeypatch):
    f = _finding(verdict_id="v30", run_id="run-3", patterns=("persistent_grid",), parameters={})

    def crash(self, path=None):
        raise SystemExit("killed before the graph was saved")

    monkeypatch.setattr(PatternGraph, "save", crash)
    with pytest.raises(SystemExit):
        record_finding(f, h200(), store=store)
    monkeypatch.undo()
    monkeypatch.setenv("CHIPLORE_HOME", str(home))
    assert f.id not in PatternGraph.load(home / "graph" / "pattern_graph.json").finding_ids()
    assert f.id in load_graph(store).finding_ids()
    assert f.id in PatternGraph.load(home / "graph" / "pattern_graph.json").finding_ids()  # saved back


def test_recorded_findings_move_the_ranking(store):
    def warp_count():
        ranked = rank_patterns(h200(), "extend_attention", "chunked-prefill", graph=load_graph(store))
        return next(r for r in ranked if r.pattern_id == "warp_count")

    before = warp_count()
    for i in range(3):
        record_finding(_finding(verdict_id=f"v4{i}", run_id="run-4", case_id="chunked-prefill",
                                case_class="prefix-extend", patterns=("warp_count",), parameters={"num_warps": 8},
                                baseline_time_us=8702.0, candidate_time_us=5800.0, roofline_fraction=None),
                       h200(), store=store)
    after = warp_count()
    assert after.score > before.score
    assert any(e.chip == "h200" and e.similarity == 1.0 and "run run-4" in e.citation for e in after.evidence)


def test_default_store_and_draft_objects(store, home):
    @dataclasses.dataclass(frozen=True)
    class Draft:  # an object of Finding's fields with `status` instead of `accepted`
        id: str
        chip: str
        task: str
        case_id: str
        case_class: str
        patterns: tuple
        parameters: dict
        baseline_time_us: float
        candidate_time_us: float
        speedup: float
        roofline_fraction: float
        verdict_stage: str
        verdict_id: str
        run_id: str
        date: str
        status: str
        notes: str = ""

    draft = Draft("run-5-v1-decode", "h200", "extend_attention", "decode", "decode", ("split_kv",), {},
                  1000.0, 500.0, 2.0, 0.5, "pass", "v1", "run-5", "2026-12-01T10:00:00", "accepted")
    assert record_finding(draft) == "run-5-v1-decode"  # store opened from $CHIPLORE_HOME
    got = query_findings(chip="h200", pattern="split_kv")
    assert any(f.id == "run-5-v1-decode" and f.accepted for f in got)


@pytest.mark.parametrize("change, message", [
    ({"verdict_stage": "mismatch"}, "accepted finding needs verdict_stage 'pass'"),
    ({"speedup": 3.0}, "disagrees"),
    ({"date": "yesterday"}, "ISO date"),
    ({"baseline_time_us": -1.0}, "baseline_time_us"),
])
def test_invalid_findings_are_refused(change, message):
    with pytest.raises(BadInputError, match=message):
        Finding.from_record({**_finding().model_dump(), "id": "", **change})


def test_unknown_pattern_is_refused_before_anything_is_stored(store):
    n = len(store.records("findings"))
    with pytest.raises(BadInputError, match="unknown pattern.*split_kvv"):
        record_finding(_finding(verdict_id="v99", patterns=("split_kvv",)), h200(), store=store)
    assert len(store.records("findings")) == n
