"""Warm ``search_knowledge`` latency through ``chiplore mcp`` at 10k chunks, measured by a real MCP client (SDK)
over stdio: the server keeps the embedding model and the BM25 index loaded between calls.

Store: the shared corpus (AMD CDNA 3 white paper, ROCm spec tables, MI300 note as ``mi300x``; Tenstorrent Wormhole
docs as ``wormhole``) onboarded with the real pipeline, then its chunks copied under further chip names
(``mi300x-copy-N``, ``wormhole-copy-N``; same texts and vectors, new ids) until the store holds ``--chunks``
chunks. Queries: the questions of ``shared/corpus/qa_dev.jsonl``, asked in turn over every chip and with the
question's own chip as filter. Two warm-up calls, then ``--calls`` timed calls (client-side round trip).

Usage: ``python benchmarks/bench_mcp_search.py [--corpus DIR] [--chunks 10000] [--calls 60] [--home DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

CORPUS_CHIPS = {"amd_cdna3": "mi300x", "tenstorrent_wormhole": "wormhole"}


def build_store(home: Path, corpus: Path, target: int) -> int:
    """Onboard the corpus into `home`, then copy its chunks under new chip names up to `target`; returns the count."""
    os.environ["CHIPLORE_HOME"] = str(home)
    from ingest.onboard import onboard
    from knowledge.store import KnowledgeStore
    from knowledge.types import Chunk

    for folder, chip in CORPUS_CHIPS.items():
        report = onboard(chip, [corpus / folder], progress=False)
        if not report.ok:
            raise SystemExit(f"onboarding {folder} failed: {[f.error for f in report.failed]}")
    store = KnowledgeStore.open()
    base = store.records("chunks", include_embeddings=True)
    copy = 0
    while store.count("chunks") < target:
        copy += 1
        batch = [r for r in base][: target - store.count("chunks")]
        chunks = [Chunk(id=f"{r.id}-copy{copy}", text=r.text, chip=f"{r.metadata['chip']}-copy-{copy}",
                        source=str(r.metadata.get("source", "")), page=r.metadata.get("page"),
                        section=str(r.metadata.get("section", "")), kind=str(r.metadata.get("kind", "prose")))
                  for r in batch]
        store.upsert_chunks(chunks, embeddings=[r.embedding for r in batch])
    return store.count("chunks")


def questions(corpus: Path) -> list[tuple[str, str | None]]:
    """(question, chip filter) pairs: each question of qa_dev.jsonl over every chip, then with its own chip."""
    out: list[tuple[str, str | None]] = []
    for line in (corpus / "qa_dev.jsonl").read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            chip = CORPUS_CHIPS.get(item["sources"][0].split("/")[0]) if item.get("sources") else None
            out += [(item["question"], None), (item["question"], chip)]
    return out


async def measure(home: Path, asked: list[tuple[str, str | None]], calls: int) -> list[float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    beside = Path(sys.executable).parent / "chiplore"
    exe = str(beside) if beside.exists() else shutil.which("chiplore") or "chiplore"
    params = StdioServerParameters(command=exe, args=["mcp"], env=dict(os.environ, CHIPLORE_HOME=str(home)))
    times = []
    async with Client(params, read_timeout_seconds=600) as client:
        for i in range(calls + 2):
            question, chip = asked[i % len(asked)]
            arguments = {"query": question, "k": 5, **({"chip": chip} if chip else {})}
            start = time.perf_counter()
            result = await client.call_tool("search_knowledge", arguments)
            seconds = time.perf_counter() - start
            if result.is_error:
                raise SystemExit(f"search_knowledge failed: {result.content[0].text}")
            if i >= 2:
                times.append(seconds)
    return times


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--home", type=Path, help="reuse a store built by an earlier run")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        args.corpus = Path("/work/shared/corpus")
    home = args.home or Path(tempfile.mkdtemp(prefix="chiplore-bench-mcp-"))
    started = time.perf_counter()
    count = build_store(home, args.corpus, args.chunks)
    print(f"store {home}: {count} chunks (built in {time.perf_counter() - started:.0f} s)")
    load = os.getloadavg()[0]
    times = anyio.run(measure, home, questions(args.corpus), args.calls)
    ordered = sorted(times)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(f"search_knowledge over MCP stdio, {len(times)} warm calls at {count} chunks: p50 "
          f"{1000 * statistics.median(times):.1f} ms, p90 {1000 * p90:.1f} ms, max {1000 * max(times):.1f} ms "
          f"(load average {load:.2f} -> {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
