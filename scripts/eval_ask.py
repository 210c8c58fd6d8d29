"""Does `ask` find the passage that answers "how many compute units" on datasheets it was not built on? (issue 18)

For each chip of the chosen datasheet sets (`scripts/eval_profiles.py`'s sets) whose truth states both its
compute-unit name and count, the chip's documents are onboarded into a fresh temporary ``CHIPLORE_HOME`` (real
chromadb, the packaged MiniLM) and ``How many <unit>s does the <device> have?`` is asked with the chip filter. A hit
at k: one of the top-k passages is an *answering* chunk (`answering`): a table row that holds the count next to
the unit's name, else any chunk that does. Chips whose documents hold no answering chunk are reported apart (the
loader or chunker lost the statement).

    python scripts/eval_ask.py [--set dev --set heldout7 ...] [--k 3]

Prints a Markdown table per set and the hit@1 / hit@k rates.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def answering(chunks, count: int, term: str) -> list[str]:
    """Ids of the chunks that answer "how many <term>s": the table rows that hold `count` (a whole number, not a
    digit of a longer one) and every word of `term` (plural ``s`` aside), else any chunk that does.

    Args:
        chunks: `knowledge.types.Chunk` objects of one chip.
        count: the compute-unit count of the truth. term: the compute unit's name, e.g. "flow cluster".
    """
    number = rf"(?<![\d.,]){count}(?![\d.,])"
    words = [w.lower().rstrip("s") for w in term.split()]

    def names(text: str) -> bool:
        return all(w in text.lower() for w in words)

    rows = [c.id for c in chunks if c.kind == "table_row" and re.search(number, c.text) and names(c.text)]
    return rows or [c.id for c in chunks if re.search(number, c.text) and names(c.text)]


def _chips(folder: Path) -> list[tuple[str, dict, Path]]:
    out = []
    for sub in sorted(p for p in folder.iterdir() if (p / "truth.json").is_file()):
        data = json.loads((sub / "truth.json").read_text(encoding="utf-8"))
        out += [(key, truth, sub) for key, truth in data.items() if not key.startswith("_")
                and isinstance(truth.get("compute_unit_name"), dict)
                and isinstance(truth.get("num_compute_units"), dict)
                and truth["compute_unit_name"].get("kind") == "stated"]
    return out


def score_set(folder: Path, k: int) -> list[dict]:
    """One row per chip of `folder`: rank of the first answering passage among the top `k` (None: not there)."""
    from eval_profiles import is_document

    from ingest.onboard import onboard
    from ingest.profile_sources import chunks_from_records
    from knowledge.retrieval import search
    from knowledge.store import KnowledgeStore

    rows = []
    for key, truth, sub in _chips(folder):
        chip = truth["_chip"]
        onboard(chip, sorted(p for p in sub.iterdir() if is_document(p)), progress=False,
                product=truth.get("_product"))
        term = re.sub(r"\s*\(.*\)", "", str(truth["compute_unit_name"]["value"]))
        stored = chunks_from_records(KnowledgeStore.open().records("chunks", chip=chip))
        answers = set(answering(stored, int(truth["num_compute_units"]["value"]), term))
        question = f"How many {term}s does the {truth.get('device', chip)} have?"
        hits = search(question, chip=chip, k=k)
        rank = next((i + 1 for i, h in enumerate(hits) if h.id in answers), None)
        rows.append({"chip": key, "question": question, "answering": len(answers), "rank": rank,
                     "top": hits[0].text[:90] if hits else ""})
    return rows


def main(argv: list[str] | None = None) -> int:
    from eval_profiles import DATASHEET_SETS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", dest="sets", action="append", choices=tuple(DATASHEET_SETS),
                        help="datasheet set (repeatable; default: dev)")
    parser.add_argument("--k", type=int, default=3, help="hit at k (default 3)")
    args = parser.parse_args(argv)
    for name in args.sets or ["dev"]:
        with tempfile.TemporaryDirectory(prefix="chiplore-eval-ask-") as home:
            os.environ["CHIPLORE_HOME"] = home
            rows = score_set(DATASHEET_SETS[name], args.k)
        print(f"### `ask` on {name}: how many compute units (hit@{args.k})\n")
        print("| chip | question | answering chunks | rank in top k | top passage |\n|---|---|---:|---:|---|")
        for r in rows:
            print(f"| {r['chip']} | {r['question']} | {r['answering']} | {r['rank'] or '-'} | "
                  f"{r['top'].replace('|', '/')} |")
        scored = [r for r in rows if r["answering"]]
        hit1 = sum(1 for r in scored if r["rank"] == 1)
        hitk = sum(1 for r in scored if r["rank"])
        print(f"\n{name}: hit@1 {hit1}/{len(scored)}, hit@{args.k} {hitk}/{len(scored)}; chips without an answering "
              f"chunk: {len(rows) - len(scored)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
