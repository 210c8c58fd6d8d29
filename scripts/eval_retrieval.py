"""Retrieval evaluation: hit@1 / hit@5 over a question set, onboarding time, and `ask` latency (warm and cold).

Usage:
    python scripts/eval_retrieval.py [--corpus ../shared/corpus] [--qa QA.jsonl] [--cold-runs 5] [--json OUT]

Each sub-folder of the corpus is onboarded as one chip (named after the folder) into a fresh temporary
CHIPLORE_HOME. A question counts as a hit at k when one of the top-k hits (no chip filter) contains one of its
``answer_keywords`` (case-insensitive) or comes from one of its expected ``sources``: same file and, where the
source names one, the same PDF page (``#p10``) or a heading on the hit's section path (``#L1``).
The stricter ``source_hit@k`` counts only the second condition.

Latency: ``warm`` = `knowledge.retrieval.search` in this process after one warm-up query (model loaded, BM25
cached); ``cold`` = wall time of a fresh ``python -m agent.cli ask QUESTION --json`` process (interpreter start,
imports, model load, BM25 index from the disk cache).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9.]+", " ", text.lower()).split())


def source_matches(hit, expected: str) -> bool:
    """True if `hit` comes from `expected` (``file`` or ``file#section`` or ``file#pN (...)``)."""
    file, _, where = expected.partition("#")
    if not (file.endswith(hit.source) or hit.source.endswith(file)):
        return False
    where = re.sub(r"\(.*\)", "", where).strip()
    if not where:
        return True
    page = re.fullmatch(r"p(\d+)", where)
    if page:
        return hit.page == int(page.group(1))
    want = _norm(where)
    headings = [_norm(h) for h in hit.section.split(" > ") if h.strip()]
    return any(h and (h == want or (len(h) >= 3 and h in want) or (len(want) >= 3 and want in h)) for h in headings)


def keyword_matches(hit, keywords: list[str]) -> bool:
    text = hit.text.lower()
    return any(k.lower() in text for k in keywords)


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated `q` quantile (0..1) of `values`; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent.parent / "shared" / "corpus")
    parser.add_argument("--qa", type=Path, default=None, help="question file (default CORPUS/qa_dev.jsonl)")
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh CLI processes for the cold latency")
    parser.add_argument("--warm-passes", type=int, default=5, help="passes over the questions for warm latency")
    parser.add_argument("--json", type=Path, default=None, help="write all results as JSON here")
    parser.add_argument("--verbose", action="store_true", help="print the top hits of every question")
    parser.add_argument("--max-chars", type=int, default=None, help="prose window size (default: chunker's)")
    parser.add_argument("--overlap-chars", type=int, default=None, help="prose window overlap (default: chunker's)")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        parser.error(f"corpus folder {corpus} does not exist (pass --corpus)")
    qa_path = args.qa or corpus / "qa_dev.jsonl"
    questions = [json.loads(line) for line in qa_path.read_text().splitlines() if line.strip()]

    home = Path(tempfile.mkdtemp(prefix="chiplore-eval-"))
    os.environ["CHIPLORE_HOME"] = str(home)
    os.environ.pop("CHIPLORE_CHROMA_URL", None)

    from ingest.chunker import ChunkingOptions
    from ingest.onboard import onboard
    from knowledge.embedder import get_embedder
    from knowledge.retrieval import default_store, search

    t0 = time.perf_counter()
    get_embedder()
    model_load_s = time.perf_counter() - t0
    folders = sorted(p for p in corpus.iterdir() if p.is_dir())
    defaults = ChunkingOptions()
    options = ChunkingOptions(max_chars=args.max_chars or defaults.max_chars,
                              overlap_chars=args.overlap_chars if args.overlap_chars is not None
                              else defaults.overlap_chars)
    t0 = time.perf_counter()
    reports = [onboard(folder.name.lower(), [folder], progress=False, options=options) for folder in folders]
    onboard_s = time.perf_counter() - t0
    counts_before = [(c.chip, c.documents, c.chunks) for c in default_store().chips()]
    t0 = time.perf_counter()
    reonboard = [onboard(folder.name.lower(), [folder], progress=False, options=options) for folder in folders]
    reonboard_s = time.perf_counter() - t0
    counts_after = [(c.chip, c.documents, c.chunks) for c in default_store().chips()]

    results = []
    for q in questions:
        hits = search(q["question"], k=5)
        kw = [keyword_matches(h, q.get("answer_keywords", [])) for h in hits]
        src = [any(source_matches(h, s) for s in q.get("sources", [])) for h in hits]
        first = next((i + 1 for i in range(len(hits)) if kw[i] or src[i]), None)
        first_src = next((i + 1 for i in range(len(hits)) if src[i]), None)
        results.append({"id": q["id"], "type": q.get("type"), "first_hit_rank": first, "first_source_rank": first_src,
                        "top": [h.cite() for h in hits]})
        if args.verbose:
            print(f"{q['id']}: first hit at {first} | {q['question']}")
            for h, a, b in zip(hits, kw, src):
                print(f"   {'K' if a else ' '}{'S' if b else ' '} {h.score:.4f} {h.cite()} :: {h.text[:110]}")

    def rate(key: str, k: int) -> float:
        return sum(1 for r in results if r[key] is not None and r[key] <= k) / len(results)

    warm = []
    search(questions[0]["question"], k=5)
    for _ in range(args.warm_passes):
        for q in questions:
            t0 = time.perf_counter()
            search(q["question"], k=5)
            warm.append((time.perf_counter() - t0) * 1000)
    cold = []
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for i in range(args.cold_runs):
        q = questions[i % len(questions)]["question"]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "agent.cli", "ask", q, "-k", "5", "--json"], cwd=REPO, env=env,
                              capture_output=True, text=True)
        cold.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1

    summary = {
        "questions": len(results), "hit@1": rate("first_hit_rank", 1), "hit@5": rate("first_hit_rank", 5),
        "source_hit@1": rate("first_source_rank", 1), "source_hit@5": rate("first_source_rank", 5),
        "onboard_seconds": round(onboard_s, 2), "reonboard_seconds": round(reonboard_s, 2),
        "model_load_seconds": round(model_load_s, 2),
        "files": sum(len(r.documents) for r in reports), "pages": sum(r.pages for r in reports),
        "chunks": sum(r.chunks for r in reports), "skipped": sum(len(r.skipped) for r in reports),
        "failed": sum(len(r.failed) for r in reports),
        "reonboard_unchanged": all(f.status in ("unchanged", "skipped") for r in reonboard for f in r.files),
        "counts_unchanged": counts_before == counts_after,
        "ask_warm_ms_p50": _round(percentile(warm, 0.5), 1), "ask_warm_ms_p95": _round(percentile(warm, 0.95), 1),
        "ask_cold_s_p50": _round(percentile(cold, 0.5), 2), "ask_cold_s_p95": _round(percentile(cold, 0.95), 2),
        "warm_queries": len(warm), "cold_runs": len(cold),
        "chunking": {"max_chars": options.max_chars, "overlap_chars": options.overlap_chars},
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_implementation()} "
                   f"{platform.python_version()}",
        "qa": str(qa_path),
    }
    print(json.dumps(summary, indent=2))
    misses = [r for r in results if r["first_hit_rank"] is None or r["first_hit_rank"] > 5]
    for r in misses:
        print(f"miss: {r['id']} top: {r['top'][:3]}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "questions": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
