"""Latency of the pattern graph and the findings memory (CPU): catalog load, rank_patterns, record_finding.

    python benchmarks/bench_patterns.py [--findings N] [--json OUT]

Uses a fresh temporary CHIPLORE_HOME (real chromadb store, real all-MiniLM-L6-v2 embeddings, the packaged
profiles) and prints medians in milliseconds. Nothing is written outside the temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": 1e3 * statistics.median(ordered), "p95_ms": 1e3 * ordered[int(0.95 * (len(ordered) - 1))],
            "n": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=200, help="findings to record (default 200)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    os.environ["CHIPLORE_HOME"] = tempfile.mkdtemp(prefix="chiplore-bench-")

    from rich.progress import track

    from hardware_profiles import known_chips, load_profile
    from kernels.extend_attention.spec import TASK
    from knowledge.catalog import _load_cached, load_catalog
    from knowledge.findings import Finding, load_graph, open_store, query_findings, record_finding
    from knowledge.graph import PatternGraph, graph_path
    from knowledge.ranking import rank_patterns

    out: dict[str, object] = {}
    _load_cached.cache_clear()
    t = time.perf_counter()
    catalog = load_catalog()
    out["catalog_load_ms"] = 1e3 * (time.perf_counter() - t)

    graph = PatternGraph.build(catalog)
    profiles = [load_profile(c) for c in known_chips()]
    samples = []
    for profile in profiles:
        for case in TASK.bench_cases:
            t = time.perf_counter()
            rank_patterns(profile, TASK, case, graph=graph, catalog=catalog)
            samples.append(time.perf_counter() - t)
    out["rank_patterns"] = {**_ms(samples), "chips": [p.chip for p in profiles], "cases": len(TASK.bench_cases)}

    store = open_store()
    store.embed_texts(["warm-up"])  # load the model before timing
    record, cases = [], list(TASK.bench_cases)
    for i in track(range(args.findings), description="record_finding"):
        profile, case = profiles[i % len(profiles)], cases[i % len(cases)]
        ok = i % 5 != 4
        f = Finding(chip=profile.chip, task=TASK.name, case_id=case.id, case_class=case.case_class,
                    patterns=("split_kv", "multi_query_blocks") if ok else ("tile_sizing",),
                    parameters={"num_splits": 2 + i % 3, "block_m": 16}, baseline_time_us=1000.0 if ok else None,
                    candidate_time_us=1000.0 / (1.1 + 0.01 * i) if ok else None,
                    verdict_stage="pass" if ok else "compile_error", verdict_id=f"v{i}", run_id="bench",
                    date="2026-11-30", accepted=ok)
        t = time.perf_counter()
        record_finding(f, profile, store=store)
        record.append(time.perf_counter() - t)
    out["record_finding"] = {**_ms(record), "last_10_p50_ms": 1e3 * statistics.median(record[-10:])}
    out["graph_file_kb"] = graph_path().stat().st_size / 1024
    t = time.perf_counter()
    load_graph(store)
    out["load_graph_with_store_sync_ms"] = 1e3 * (time.perf_counter() - t)
    t = time.perf_counter()
    found = query_findings(chip="h200", store=store)
    out["query_findings_ms"] = {"ms": 1e3 * (time.perf_counter() - t), "results": len(found)}
    full = load_graph(store, sync=False)
    samples = []
    for case in TASK.bench_cases:
        t = time.perf_counter()
        rank_patterns(profiles[0], TASK, case, graph=full, catalog=catalog)
        samples.append(time.perf_counter() - t)
    out[f"rank_patterns_with_{args.findings}_findings"] = _ms(samples)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
