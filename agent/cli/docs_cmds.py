"""``chiplore onboard``, ``chiplore ask`` and ``chiplore chips``: documents in, cited passages out.

``--json`` output schemas are documented in docs/cli-json.md and kept stable (``schema`` field = 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agent.cli.app import app
from agent.cli.console import CliConsole
from core.text import printable

JSON_SCHEMA = 1
#: `chiplore onboard` exit code when some files failed and the others were stored (docs/cli-json.md).
ONBOARD_PARTIAL_EXIT = 2
#: Document text and file names are printed as text: never parsed as Rich markup (``[b]``) or emoji codes
#: (``:warning:``, ``rw:x:ro``); control characters in them are escaped (`core.text.printable`).
_out = CliConsole(highlight=False)
_err = CliConsole(stderr=True, highlight=False)


def _line(*parts: str | tuple[str, str]) -> Text:
    """One line of plain text pieces, each optionally styled: ``_line(("error:", "red"), " ", message)``."""
    return Text.assemble(*((printable(p[0]), p[1]) if isinstance(p, tuple) else printable(p) for p in parts))


def _print_json(obj: dict) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


@app.command("onboard")
def onboard_cmd(
    chip: str = typer.Argument(..., help="Chip name, e.g. mi300x (case-insensitive)."),
    paths: list[Path] = typer.Argument(
        ..., help="Documents and/or folders (PDF, Markdown, reST, AsciiDoc, HTML, text, JSON, YAML or INI files)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (docs/cli-json.md)."),
    product: str = typer.Option(None, "--product", help="The chip's product as the documents name it, when the "
                                "chip name does not (e.g. AS-4 in a table of AS-2, AS-4, AS-8)."),
    no_wait: bool = typer.Option(False, "--no-wait",
                                 help="Fail at once when another process is writing to the store (default: wait)."),
) -> None:
    """Parse, chunk, embed and store a chip's documents with provenance; re-running is idempotent.

    One writer at a time: while another process onboards into the same embedded store, this one waits (saying for
    whom) or, with --no-wait, fails with exit code 1. Exit code 0: every document is stored (entries that are not
    read, such as unsupported types, hidden files or links leaving the folder, are listed as skipped with the
    reason); 2: some files failed (each named on one error line) and the others were stored; 1: nothing could be
    stored (only the error lines are printed, no summary), or bad input (a path that does not exist, a bad chip
    name, an unreadable or damaged store, a busy store with --no-wait).
    """
    from ingest.onboard import onboard

    report = onboard(chip, paths, progress=not as_json, product=product, wait=not no_wait)
    if as_json:
        _print_json({"schema": JSON_SCHEMA, **report.to_json()})
    else:
        for f in report.failed:
            _err.print(_line(("error:", "red"), " ", f.error))
        for f in report.skipped:
            _err.print(_line(("skipped:", "yellow"), f" {f.source} ({f.error})"))
        for f in report.files:
            if f.note:
                _err.print(_line(("repaired:", "yellow"), f" {f.source} ({f.note})"))
        if not report.ok:  # nothing stored: the error lines are the whole answer (exit code 1)
            raise typer.Exit(1)
        stored = len([f for f in report.files if f.status == "stored"])
        _out.print(_line(
            "onboarded ", (report.chip, "bold"), f": {len(report.documents)} files ({stored} stored, "
            f"{len(report.documents) - stored} unchanged), {report.pages} pages, {report.chunks} chunks, "
            f"{len(report.skipped)} skipped, {len(report.failed)} failed in {report.seconds:.1f} s"))
        if report.profile is not None:
            profile = report.profile
            if profile.error:
                _err.print(_line(("profile not updated:", "red"), " ", profile.error))
            else:
                where = f"; saved {profile.path} (chiplore profile show {report.chip})" if profile.path else ""
                _out.print(_line(f"hardware profile: {profile.summary}{where}"))
                for line in profile.advice:
                    _out.print(_line(line))
    if not report.ok:
        raise typer.Exit(1)
    if report.failed:
        raise typer.Exit(ONBOARD_PARTIAL_EXIT)


@app.command("ask")
def ask_cmd(
    questions: list[str] = typer.Argument(None, help="One or more questions, each in quotes; '-' reads one question "
                                                     "per line from standard input."),
    chip: str = typer.Option(None, "--chip", "-c", help="Only this chip's documents and findings."),
    k: int = typer.Option(5, "-k", "--top-k", help="Number of passages (1 to 100)."),
    as_json: bool = typer.Option(False, "--json", help="Print hits as JSON (docs/cli-json.md)."),
    patterns: bool = typer.Option(True, "--patterns/--no-patterns",
                                  help="Also list the optimization patterns closest to the question, with evidence."),
) -> None:
    """Hybrid (dense + BM25) search over documents and findings; prints passages with citations, then the catalog's
    optimization patterns closest in meaning to the question with the evidence behind them (findings measured by
    optimization runs, published examples).

    Several questions in one call share one load of the embedding model (the slow part of a cold start).
    """
    from core.errors import BadInputError
    from knowledge.retrieval import default_store, search

    asked = _questions(questions or [])
    if not asked:
        raise BadInputError("ask: no question given; pass QUESTION (several are allowed) or '-' to read them "
                            "from standard input, one per line")
    for entry in default_store().interrupted("chunks"):
        _err.print(_line(("warning:", "yellow"), f" {entry.source} (chip {entry.chip}) is not completely stored: its "
                         f"onboarding was interrupted; onboard it again (chiplore onboard {entry.chip} PATH)"))
    results = []
    graph = _pattern_graph() if patterns else None
    for question in asked:
        hits = search(question, chip=chip, k=k)
        if not hits:
            _refuse_an_empty_store()
        results.append((question, hits, _patterns(question, graph, chip) if patterns else []))
    if as_json:
        docs = [{"question": q, "chip": chip.lower() if chip else None, "k": k,
                 "hits": [dict(rank=i, **h.to_json()) for i, h in enumerate(hits, start=1)],
                 "patterns": [m.to_json() for m in matched]} for q, hits, matched in results]
        _print_json({"schema": JSON_SCHEMA, **docs[0]} if len(docs) == 1 else {"schema": JSON_SCHEMA, "results": docs})
        return
    for number, (question, hits, matched) in enumerate(results):
        if len(results) > 1:
            _out.print(("\n" if number else "") + f"[bold]Q{number + 1}: {escape(question)}[/bold]")
        _print_hits(hits)
        _print_patterns(matched, chip)


def _pattern_graph():
    """The pattern graph with the findings store's evidence (`knowledge.findings.load_graph`), read without
    syncing: `ask` only reads."""
    from knowledge.findings import load_graph

    return load_graph(sync=False)


def _patterns(question: str, graph, chip: str | None) -> list:
    from knowledge.pattern_search import match_patterns

    return match_patterns(question, graph=graph, chip=chip.lower() if chip else None)


def _print_patterns(matched: list, chip: str | None) -> None:
    if not matched:
        return
    rank = f"chiplore patterns --chip {chip}" if chip else "chiplore patterns --chip CHIP"
    _out.print(_line(("patterns", "bold"), f" closest to the question (the catalog; {rank} ranks them for a chip):"))
    for m in matched:
        measured = (f", best measured x{m.best_gain:.2f} on {m.best_chip}" if m.best_gain is not None else "")
        evidence = f"{m.findings} finding(s){measured}, {m.examples} published example(s)"
        _out.print(_line("  ", (m.pattern_id, "bold"), f" {m.name}  ", (f"similarity {m.similarity:.2f}", "dim")))
        _out.print(_line(f"    evidence: {evidence}; tasks: {', '.join(m.tasks) or '-'}"))
        for citation in m.citations[:2]:
            _out.print(_line(f"    - {citation}"))


def _questions(given: list[str]) -> list[str]:
    """The questions of the command line, with ``-`` replaced by the non-empty lines of standard input."""
    import sys

    out: list[str] = []
    for item in given:
        if item == "-":
            out.extend(line.strip() for line in sys.stdin.read().splitlines() if line.strip())
        else:
            out.append(item)
    return out


def _print_hits(hits: list) -> None:
    if not hits:
        _out.print("no matching passages")
        return
    for i, hit in enumerate(hits, start=1):
        _out.print(_line((f"[{i}]", "bold"), " ", (hit.cite(), "cyan"), "  ",
                         (f"{hit.chip} · {hit.collection} · score {hit.score:.4f}", "dim")))
        text = " ".join(hit.text.split())
        _out.print(_line("    " + (text if len(text) <= 600 else text[:597] + "...")))


def _refuse_an_empty_store() -> None:
    """An empty knowledge store is an error naming the store and the command that fills it (not 'no passages')."""
    from core.errors import BadInputError
    from knowledge.retrieval import default_store

    store = default_store()
    if not store.chips():
        raise BadInputError(f"ask: {store.location} is empty; onboard a chip's documents first "
                            "with `chiplore onboard CHIP PATH...`")


@app.command("chips")
def chips_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print as JSON (docs/cli-json.md)."),
) -> None:
    """Chips in the knowledge store with their document, chunk and finding counts."""
    from knowledge.retrieval import default_store

    store = default_store()
    chips = store.chips()
    if as_json:
        _print_json({"schema": JSON_SCHEMA, "store": store.location,
                     "chips": [{"chip": c.chip, "documents": c.documents, "chunks": c.chunks,
                                "findings": c.findings} for c in chips]})
        return
    if not chips:
        _out.print(f"no chips in {store.location} yet; run `chiplore onboard CHIP PATH...`")
        return
    table = Table(title=escape(store.location))
    for col in ("chip", "documents", "chunks", "findings"):
        table.add_column(col, justify="left" if col == "chip" else "right")
    for c in chips:
        table.add_row(c.chip, str(c.documents), str(c.chunks), str(c.findings))
    _out.print(table)


