"""Evaluate rule-based profile extraction against hand-checked truth: the shared corpus and the datasheets.

Sets (``--set``, repeatable; default ``corpus`` and ``dev``):

- ``corpus``: the real documents of ``shared/corpus`` (``profiles_truth_dev.json``: Wormhole n150, MI300X);
- ``dev``: the fictional datasheets of ``tests/data/datasheets/*/`` (one ``truth.json`` each);
- ``heldout``: the held-out datasheets of ``tests/data/datasheets_heldout/*/``, scored last (issue 18);
- ``heldout2``: the second held-out set, ``tests/data/datasheets_heldout_v2/*/`` (written after the rules);
- ``heldout3``: the third held-out set, ``tests/data/datasheets_heldout_v3/*/`` (written blind: without reading the
  extractor or the other sets' documents);
- ``heldout4``: the fourth held-out set, ``tests/data/datasheets_heldout_v4/*/`` (written blind, as ``heldout3``);
- ``heldout5``: the fifth held-out set, ``tests/data/datasheets_heldout_v5/*/`` (written blind, as ``heldout3``);
- ``heldout6``: the sixth held-out set, ``tests/data/datasheets_heldout_v6/*/`` (written blind, as ``heldout3``);
- ``heldout7``: the seventh held-out set, ``tests/data/datasheets_heldout_v7/*/`` (written blind, as ``heldout3``);
- ``heldout8``: the eighth held-out set, ``tests/data/datasheets_heldout_v8/*/`` (written blind, as ``heldout3``);
- ``heldout9``: the ninth held-out set, ``tests/data/datasheets_heldout_v9/*/`` (written blind, as ``heldout3``);
- ``heldout10``: the tenth held-out set, ``tests/data/datasheets_heldout_v10/*/`` (written blind, as ``heldout3``);
- ``heldout11``: the eleventh held-out set, ``tests/data/datasheets_heldout_v11/*/`` (written blind, as ``heldout3``);
- ``dev12``: development datasheets in other vocabularies and layouts, ``tests/data/datasheets_dev_v12/*/`` (a
  glossary table of terms, a JSON device descriptor, prose with per-sub-unit limits);
- ``dev14``: development datasheets of the i18-fix11 round, ``tests/data/datasheets_dev_v14/*/`` (prose only with
  a competitor and a predecessor, a multi-product table with per-unit / per-block limits, term and key lists with
  a unit inside the compute unit);
- ``dev15``: development datasheets of 2026-12-02, ``tests/data/datasheets_dev_v15/*/`` (products as columns, prose of
  hosted units, a brief with a denied tensor-copy engine);
- ``dev16``: development datasheets of 2026-12-02, ``tests/data/datasheets_dev_v16/*/`` (six vendors' layouts:
  AsciiDoc, reStructuredText, a three-SKU HTML table, a spec brief, release notes and FAQ, prose in words);
- ``heldout12``: the one datasheet held out of the ``dev12`` development, ``tests/data/datasheets_heldout_v12/*/``
  (French/English), scored last;
- ``heldout13a``: one German/English datasheet, ``tests/data/datasheets_heldout_v13a/*/``, held out of the
  i18-fix10a round (role definition of the compute unit, bare clock column, paragraph after a list), scored last;
- ``heldout14``: the fourteenth held-out set, ``tests/data/datasheets_heldout_v14/*/`` (8 chips, written blind, as
  ``heldout3``).

For each chip the documents go through `ingest.profile_sources.document_chunks` (the onboarding loaders and
chunker) and `ingest.profile_extract.extract_profile_with_report`; with ``--pdf`` each datasheet written in
Markdown is scored a second time from its PDF form (rendered by ``scripts/datasheet_pdf.py``, needs fpdf2). Every
truth field with a counterpart in `HardwareProfile` is compared:

- ``stated`` / ``derived``: correct when the extracted value is within 0.5 % of the truth value;
- ``not_stated``: correct when the extracted value is null (no invented value);
- ``conflict``: correct when the extracted field is marked ``conflict``;
- ``_decoys`` (datasheets): an extracted value within 0.5 % of a value that the document states for another
  product, scope or unit counts as *foreign* (the issue's bar: none).

Truth fields without a counterpart in the profile schema (DRAM type, L1/last-level cache, interconnect, ...)
are listed as "not in schema" and left out of the scores.

Usage::

    python scripts/eval_profiles.py [--set corpus|dev|heldout|heldout2|...|heldout11|dev12|dev14|dev15|dev16|heldout12|heldout13a|heldout14 ...] [--pdf]
        [--corpus DIR] [--json OUT.json] [--benchmarks BENCHMARKS.md] [--check]

``--check`` exits 1 unless every set scored meets the bar: stated >= 90 %, every not_stated field null, every
conflict marked, no foreign value.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from hardware_profiles import HardwareProfile  # noqa: E402
from ingest.loaders import is_supported  # noqa: E402
from ingest.profile_extract import extract_profile_with_report  # noqa: E402
from ingest.profile_sources import document_chunks  # noqa: E402

#: truth key -> (chip name used for extraction, corpus folder)
CHIPS = {
    "tenstorrent_wormhole_n150": ("wormhole_n150", "tenstorrent_wormhole"),
    "amd_mi300x": ("mi300x", "amd_cdna3"),
}
#: datasheet sets -> folder (each sub-folder: documents + truth.json)
DATASHEET_SETS = {
    "dev": _REPO / "tests" / "data" / "datasheets",
    "heldout": _REPO / "tests" / "data" / "datasheets_heldout",
    "heldout2": _REPO / "tests" / "data" / "datasheets_heldout_v2",
    "heldout3": _REPO / "tests" / "data" / "datasheets_heldout_v3",
    "heldout4": _REPO / "tests" / "data" / "datasheets_heldout_v4",
    "heldout5": _REPO / "tests" / "data" / "datasheets_heldout_v5",
    "heldout6": _REPO / "tests" / "data" / "datasheets_heldout_v6",
    "heldout7": _REPO / "tests" / "data" / "datasheets_heldout_v7",
    "heldout8": _REPO / "tests" / "data" / "datasheets_heldout_v8",
    "heldout9": _REPO / "tests" / "data" / "datasheets_heldout_v9",
    "heldout10": _REPO / "tests" / "data" / "datasheets_heldout_v10",
    "heldout11": _REPO / "tests" / "data" / "datasheets_heldout_v11",
    "dev12": _REPO / "tests" / "data" / "datasheets_dev_v12",
    "dev14": _REPO / "tests" / "data" / "datasheets_dev_v14",
    "dev15": _REPO / "tests" / "data" / "datasheets_dev_v15",
    "dev16": _REPO / "tests" / "data" / "datasheets_dev_v16",
    "heldout12": _REPO / "tests" / "data" / "datasheets_heldout_v12",
    "heldout13a": _REPO / "tests" / "data" / "datasheets_heldout_v13a",
    "heldout14": _REPO / "tests" / "data" / "datasheets_heldout_v14",
}
#: truth field -> (profile field, factor from the profile unit to the truth unit)
SCALAR_MAP = {
    "num_compute_units": ("num_compute_units", 1.0),
    "warp_or_wave_width": ("warp_size", 1.0),
    "max_threads_per_block": ("max_threads_per_block", 1.0),
    "shared_local_memory_per_unit_bytes": ("smem_per_compute_unit_kb", 2.0**10),
    "shared_local_memory_per_block_bytes": ("smem_per_block_kb", 2.0**10),
    "register_file_per_unit_bytes": ("registers_per_compute_unit", 4.0),
    "l2_cache_bytes": ("l2_cache_mb", 2.0**20),
    "dram_capacity_bytes": ("mem_capacity_gb", 2.0**30),
    "dram_bandwidth_bytes_per_s": ("mem_bw_gbps", 1e9),
    "clock_mhz": ("clock_mhz", 1.0),
}
#: Files of a chip's folder that are its answer key, never read as documents.
TRUTH_FILES = frozenset({"truth.json"})


def is_document(path: Path) -> bool:
    """A file the onboarding loaders read (`ingest.loaders.is_supported`), other than the answer key."""
    return path.is_file() and path.name not in TRUTH_FILES and is_supported(path)
REL_TOL = 0.005


@dataclass
class FieldResult:
    chip: str
    truth_field: str
    profile_field: str | None
    truth_kind: str
    truth_value: object
    value: object
    kind: str | None
    correct: bool | None
    note: str = ""
    foreign: bool = False


@dataclass
class Case:
    """One chip to extract: truth key, chip name, documents, optional product, truth entry."""

    key: str
    chip: str
    paths: list[Path]
    truth: dict
    product: str | None = None
    form: str = ""
    problems: list[str] = field(default_factory=list)


def _peak_map(peaks: dict) -> dict[str, str | None]:
    """truth peak key -> profile dtype: the dtype prefix of the key; of a matrix/vector pair, the matrix one
    (the profile keeps the highest dense peak); keys without a plain dtype are not in the schema."""
    out: dict[str, str | None] = {}
    for key in peaks:
        match = re.match(r"^(fp64|fp32|tf32|fp16|bf16|fp8|int8)(?:_(\w+))?$", key)
        if not match:
            out[key] = None
            continue
        dtype, variant = match.group(1), match.group(2) or ""
        siblings = [k for k in peaks if k.startswith(dtype + "_") or k == dtype]
        if variant.startswith("vector") and any(k.startswith(dtype + "_matrix") for k in siblings):
            out[key] = None
        else:
            out[key] = dtype
    return out


def _same_name(truth: str, ours: str | None) -> bool:
    def norm(text: str) -> str:
        text = re.sub(r"\(.*?\)", "", text.lower())
        return " ".join(re.sub(r"s$", "", w) for w in text.split())
    return ours is not None and norm(truth) == norm(ours)


def _close(a: float, b: float) -> bool:
    return abs(float(a) - float(b)) <= REL_TOL * abs(float(b))


def _judge(kind: str, truth_value, value, our_kind: str | None) -> bool | None:
    if kind == "not_stated":
        return value is None
    if kind == "conflict":
        return our_kind == "conflict"
    if kind in ("stated", "derived"):
        if value is None or truth_value is None:
            return False
        return _close(value, truth_value)
    return None


def _foreign(decoys: dict, name: str, value, truth_value) -> bool:
    """True when `value` matches a decoy of field `name` (and not the truth value itself)."""
    if value is None or isinstance(value, bool):
        return False
    if truth_value is not None and _close(value, truth_value):
        return False
    return any(_close(value, d) for d in decoys.get(name, []))


def compare(truth_key: str, truth: dict, profile: HardwareProfile) -> list[FieldResult]:
    """Per-field results of one chip."""
    results = []
    decoys = truth.get("_decoys", {})
    name = truth.get("compute_unit_name")
    if isinstance(name, dict):
        ours = profile.compute_unit_name
        results.append(FieldResult(truth_key, "compute_unit_name", "compute_unit_name", name.get("kind", ""),
                                   name.get("value"), ours, "stated" if ours else None,
                                   _same_name(str(name.get("value")), ours) if name.get("kind") == "stated"
                                   else _judge(name.get("kind", ""), None, ours, None)))
    for key, entry in truth.items():
        if key.startswith("_") or not isinstance(entry, dict) or key in ("compute_unit_name", "peak_flops"):
            continue
        if key not in SCALAR_MAP:
            results.append(FieldResult(truth_key, key, None, entry.get("kind", ""), entry.get("value"), None, None,
                                       None, "not in schema"))
            continue
        field_name, factor = SCALAR_MAP[key]
        field_ = getattr(profile, field_name)
        value = None if field_.value is None else field_.value * factor
        results.append(FieldResult(truth_key, key, field_name, entry["kind"], entry.get("value"), value, field_.kind,
                                   _judge(entry["kind"], entry.get("value"), value, field_.kind),
                                   foreign=_foreign(decoys, key, value, entry.get("value"))))
    peaks = truth.get("peak_flops", {})
    for key, dtype in _peak_map(peaks).items():
        entry = peaks[key]
        if dtype is None:
            results.append(FieldResult(truth_key, f"peak_flops.{key}", None, entry.get("kind", ""),
                                       entry.get("value"), None, None, None, "not in schema"))
            continue
        field_ = profile.peak_tflops.get(dtype)
        value = None if field_ is None or field_.value is None else field_.value * 1e12
        kind = None if field_ is None else field_.kind
        results.append(FieldResult(truth_key, f"peak_flops.{key}", f"peak_tflops.{dtype}", entry["kind"],
                                   entry.get("value"), value, kind,
                                   _judge(entry["kind"], entry.get("value"), value, kind),
                                   foreign=_foreign(decoys, f"peak_flops.{key}", value, entry.get("value"))))
    return results


def summarize(results: list[FieldResult]) -> dict:
    """Scores by truth kind over the fields that the schema holds, and the count of foreign values."""
    scored = [r for r in results if r.correct is not None]
    out = {}
    for kind in ("stated", "derived", "not_stated", "conflict"):
        rows = [r for r in scored if r.truth_kind == kind]
        out[kind] = {"correct": sum(r.correct for r in rows), "total": len(rows)}
    out["not_in_schema"] = sum(1 for r in results if r.note == "not in schema")
    out["foreign"] = sum(1 for r in results if r.foreign)
    return out


def passes(summary: dict) -> bool:
    """The issue's bar: stated >= 90 %, every not_stated null, every conflict marked, no foreign value."""
    stated, absent, conflict = summary["stated"], summary["not_stated"], summary["conflict"]
    return (stated["total"] > 0 and stated["correct"] / stated["total"] >= 0.9
            and absent["correct"] == absent["total"] and conflict["correct"] == conflict["total"]
            and summary.get("foreign", 0) == 0)


def _fmt(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


_RULES = {"stated": "value within 0.5 %", "derived": "value within 0.5 % (not required)",
          "not_stated": "extracted value is null", "conflict": "field marked conflict"}


def markdown(results: list[FieldResult], summary: dict, meta: dict, title: str = "") -> str:
    """BENCHMARKS.md section: command, date, machine, commit, scores and the per-field table."""
    lines = [
        f"### {title or 'Hardware-profile extraction vs. profiles_truth_dev.json'}",
        "",
        f"Command: `{meta['command']}`; date {meta['date']}; machine {meta['machine']}; commit {meta['commit']}; "
        f"documents read through {meta['loader']}.",
        "",
        "| kind | correct / total | rule |",
        "|---|---|---|",
    ]
    for kind in ("stated", "not_stated", "conflict", "derived"):
        s = summary[kind]
        pct = f" ({100 * s['correct'] / s['total']:.0f} %)" if s["total"] else ""
        lines.append(f"| {kind} | {s['correct']} / {s['total']}{pct} | {_RULES[kind]} |")
    lines.append(f"| foreign | {summary.get('foreign', 0)} | values of another product, scope or unit (decoys) |")
    lines += ["", f"Truth fields outside the HardwareProfile schema (not scored): {summary['not_in_schema']}.", "",
              "| chip | truth field | profile field | truth kind | truth | extracted | kind | ok |",
              "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.correct is None:
            continue
        ok = "yes" if r.correct else "**no**"
        if r.foreign:
            ok += " (**foreign**)"
        lines.append(f"| {r.chip} | {r.truth_field} | {r.profile_field or '-'} | {r.truth_kind} | "
                     f"{_fmt(r.truth_value)} | {_fmt(r.value)} | {r.kind or '-'} | {ok} |")
    return "\n".join(lines) + "\n"


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=_REPO).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def corpus_cases(corpus: Path) -> list[Case]:
    """The shared corpus chips (skipped by the caller when the corpus is absent)."""
    truth = json.loads((corpus / "profiles_truth_dev.json").read_text(encoding="utf-8"))
    cases = []
    for truth_key, (chip, folder) in CHIPS.items():
        paths = sorted(p for p in (corpus / folder).iterdir() if is_document(p))
        cases.append(Case(truth_key, chip, paths, truth[truth_key]))
    return cases


def datasheet_cases(folder: Path, pdf_dir: Path | None = None) -> list[Case]:
    """One case per datasheet folder (its documents and truth.json); with `pdf_dir`, also the PDF form of each
    Markdown datasheet (rendered there) whose truth does not say ``"_pdf": false``."""
    cases = []
    for sub in sorted(p for p in folder.iterdir() if (p / "truth.json").is_file()):
        data = json.loads((sub / "truth.json").read_text(encoding="utf-8"))
        for key, truth in data.items():
            if key.startswith("_"):
                continue
            paths = sorted(p for p in sub.iterdir() if is_document(p))
            cases.append(Case(key, truth["_chip"], paths, truth, truth.get("_product")))
            markdown_docs = [p for p in paths if p.suffix.lower() == ".md"]
            if pdf_dir is not None and markdown_docs and truth.get("_pdf", True):
                pdfs = [render_pdf(p, pdf_dir / sub.name) for p in markdown_docs]
                others = [p for p in paths if p not in markdown_docs]
                cases.append(Case(f"{key} (pdf)", truth["_chip"], others + pdfs, truth, truth.get("_product"),
                                  form="pdf"))
    return cases


def render_pdf(markdown_path: Path, out_dir: Path) -> Path:
    """The PDF form of a Markdown datasheet, rendered into `out_dir` by ``scripts/datasheet_pdf.py``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from datasheet_pdf import render_markdown_pdf

    out_dir.mkdir(parents=True, exist_ok=True)
    return render_markdown_pdf(markdown_path, out_dir / (markdown_path.stem + ".pdf"))


def evaluate(cases: list[Case]) -> tuple[list[FieldResult], dict, str]:
    """Extract every case and compare; returns (results, summary, loader path used)."""
    results: list[FieldResult] = []
    loader = ""
    for case in cases:
        chunks, loader = document_chunks(case.chip, case.paths)
        profile, report = extract_profile_with_report(case.chip, chunks, product=case.product)
        case.problems = list(report.problems)
        results.extend(compare(case.key, case.truth, profile))
    return results, summarize(results), loader


def run(corpus: Path) -> tuple[list[FieldResult], dict, str]:
    """The shared corpus alone (kept for callers of the issue-3 evaluation)."""
    return evaluate(corpus_cases(corpus))


def default_corpus() -> Path:
    """``$CHIPLORE_CORPUS``, else the first ``shared/corpus`` next to the repository or one level above it."""
    env = os.environ.get("CHIPLORE_CORPUS")
    if env:
        return Path(env)
    for candidate in (_REPO.parent / "shared" / "corpus", _REPO.parent.parent / "shared" / "corpus"):
        if candidate.is_dir():
            return candidate
    return _REPO.parent / "shared" / "corpus"


_TITLES = {"corpus": "Shared corpus (real documents: Wormhole n150, MI300X)",
           "dev": "Development datasheets (8 fictional chips)",
           "heldout": "Held-out datasheets v1 (4 fictional chips, scored last)",
           "heldout2": "Held-out datasheets v2 (5 fictional chips, written after the rules)",
           "heldout3": "Held-out datasheets v3 (5 fictional chips, written blind)",
           "heldout4": "Held-out datasheets v4 (5 fictional chips, written blind)",
           "heldout5": "Held-out datasheets v5 (5 fictional chips, written blind)",
           "heldout6": "Held-out datasheets v6 (5 fictional chips, written blind)",
           "heldout7": "Held-out datasheets v7 (5 fictional chips, written blind)",
           "heldout8": "Held-out datasheets v8 (5 fictional chips, written blind)",
           "heldout9": "Held-out datasheets v9 (5 fictional chips, written blind)",
           "heldout10": "Held-out datasheets v10 (5 fictional chips, written blind)",
           "heldout11": "Held-out datasheets v11 (5 fictional chips, written blind)",
           "dev12": "Development datasheets v12 (3 fictional chips: a term table, a JSON descriptor, prose)",
           "dev14": "Development datasheets v14 (3 fictional chips: prose, a multi-product table, term and key lists)",
           "dev15": "Development datasheets v15 (3 fictional chips: products as columns, prose of hosted units, a brief)",
           "dev16": "Development datasheets v16 (6 fictional chips in six vendors' layouts)",
           "heldout12": "Held-out datasheet v12 (1 fictional chip, French/English, scored last)",
           "heldout13a": "Held-out datasheet v13a (1 fictional chip, German/English, scored last)",
           "heldout14": "Held-out datasheets v14 (8 fictional chips, written blind)"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", dest="sets", action="append", choices=tuple(["corpus", *DATASHEET_SETS]),
                        help="which truth to score (repeatable; default: corpus and dev)")
    parser.add_argument("--pdf", action="store_true", help="also score the PDF form of Markdown datasheets")
    parser.add_argument("--corpus", type=Path, default=default_corpus(),
                        help="corpus folder (default: $CHIPLORE_CORPUS, else ../shared/corpus of the repository)")
    parser.add_argument("--json", type=Path, help="write per-field results as JSON")
    parser.add_argument("--benchmarks", type=Path, help="append the results sections to this BENCHMARKS.md")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every set meets the issue's bar")
    args = parser.parse_args(argv)
    sets = args.sets or ["corpus", "dev"]
    meta = {"command": "python scripts/eval_profiles.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": dt.date.today().isoformat(), "machine": f"{platform.machine()} {platform.system()} "
            f"(python {platform.python_version()})", "commit": _git_commit()}
    texts, report, ok = [], {}, True
    with tempfile.TemporaryDirectory(prefix="chiplore-datasheet-pdf-") as tmp:
        for name in sets:
            if name == "corpus":
                if not (args.corpus / "profiles_truth_dev.json").is_file():
                    print(f"error: {args.corpus}: no profiles_truth_dev.json (use --corpus)", file=sys.stderr)
                    return 1
                cases = corpus_cases(args.corpus)
            else:
                cases = datasheet_cases(DATASHEET_SETS[name], Path(tmp) / name if args.pdf else None)
            results, summary, loader = evaluate(cases)
            text = markdown(results, summary, {**meta, "loader": loader}, _TITLES[name])
            texts.append(text)
            print(text)
            verdict = passes(summary)
            ok = ok and verdict
            print(f"{name}: {'PASS' if verdict else 'FAIL'} (stated >= 90 %, not_stated all null, conflicts all "
                  f"marked, no foreign value)\n")
            report[name] = {"summary": summary, "results": [asdict(r) for r in results]}
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "sets": report}, indent=1), encoding="utf-8")
    if args.benchmarks:
        with args.benchmarks.open("a", encoding="utf-8") as handle:
            handle.write("\n" + "\n".join(texts))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
