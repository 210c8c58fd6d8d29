"""Patterns matched to a question by meaning (knowledge/pattern_search.py), with the evidence behind them: real
MiniLM embeddings of the shipped catalog, and a pattern graph holding findings built here."""

from __future__ import annotations

import math

import pytest

from knowledge.catalog import load_catalog
from knowledge.findings import Finding
from knowledge.graph import PatternGraph
from knowledge.pattern_search import match_patterns, pattern_text


def _finding(i: int, speedup: float, chip: str) -> dict:
    f = Finding(chip=chip, task="extend_attention", case_id="decode", case_class="decode",
                patterns=("split_kv",), parameters={"num_splits": 4}, baseline_time_us=100.0 * speedup,
                candidate_time_us=100.0, verdict_stage="pass", verdict_id=f"v{i}", run_id="run-a",
                date="2026-12-02", accepted=True)
    return f.record({"num_compute_units": 132.0, "smem_per_block_kb": 227.0, "bw_per_flop": 0.0034,
                     "warp_size": 32.0})


@pytest.mark.parametrize("question, expected", [
    ("how can a kernel hide memory latency behind compute?", "software_pipelining"),
    ("When does splitting the reduction over several programs help?", "split_kv"),
    ("Should the kernel load tiles with the tensor memory accelerator (TMA)?", "pregather_tma"),
])
def test_a_question_about_a_technique_finds_its_pattern(question, expected):
    assert expected in [m.pattern_id for m in match_patterns(question, k=3)]


@pytest.mark.parametrize("question", ["What is the HBM bandwidth?", "How many vector cores does the Z9 have?",
                                      "Tensix core count", "What is the LDS size per CU?"])
def test_a_bare_fact_question_lists_no_pattern(question):
    assert match_patterns(question) == []


def test_matches_carry_the_graph_evidence_and_the_best_measured_gain():
    graph = PatternGraph.build(load_catalog(), [_finding(0, 3.0, "h200"), _finding(1, 1.5, "mi300x")])
    (split,) = [m for m in match_patterns("split the reduction axis over more programs", graph=graph, k=3)
                if m.pattern_id == "split_kv"]
    assert split.findings == 2 and split.best_gain == pytest.approx(3.0) and split.best_chip == "h200"
    assert split.citations and split.sources and "extend_attention" in split.tasks
    (on_mi300x,) = [m for m in match_patterns("split the reduction axis over more programs", graph=graph,
                                              chip="mi300x") if m.pattern_id == "split_kv"]
    assert on_mi300x.best_gain == pytest.approx(1.5) and on_mi300x.findings == 2
    assert math.isclose(split.similarity, on_mi300x.similarity)


def test_the_matched_text_holds_each_tasks_own_description():
    catalog = load_catalog()
    text = pattern_text(catalog, "split_kv")
    own = [p.description for t in catalog.tasks for p in catalog.patterns_for(t) if p.id == "split_kv"]
    assert all(d in text for d in own) and "split kv" in text


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="empty"):
        match_patterns("  ")
    with pytest.raises(ValueError, match="k must be"):
        match_patterns("tiles", k=0)
