"""``chiplore onboard``, ``chiplore ask`` and ``chiplore chips``: documents in, cited passages out.

``--json`` output schemas are documented in docs/cli-json.md and kept stable (``schema`` field = 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent.cli.app import app

JSON_SCHEMA = 1
#: `chiplore onboard` exit code when some files failed and the others were stored (docs/cli-json.md).
ONBOARD_PARTIAL_EXIT = 2
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _print_json(obj: dict) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


@app.command("onboard")
def onboard_cmd(
    chip: str = typer.Argument(..., help="Chip name, e.g. mi300x (case-insensitive)."),
    paths: list[Path] = typer.Argument(..., help="Documents and/or folders (PDF, Markdown, reST, HTML, text)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (docs/cli-json.md)."),
    product: str = typer.Option(None, "--product", help="The chip's product as the documents name it, when the "
                                "chip name does not (e.g. AS-4 in a table of AS-2, AS-4, AS-8)."),
) -> None:
    """Parse, chunk, embed and store a chip's documents with provenance; re-running is idempotent.

    Exit code 0: every document is stored (unsupported file types are listed as skipped); 2: some files failed
    (each named on one error line) and the others were stored; 1: nothing could be stored, or bad input (a path that
    does not exist, a bad chip name, an unreadable store).
    """
    from ingest.onboard import onboard

    report = onboard(chip, paths, progress=not as_json, product=product)
    if as_json:
        _print_json({"schema": JSON_SCHEMA, **report.to_json()})
    else:
        for f in report.failed:
            _err.print(f"[red]error:[/red] {escape(f.error)}")
        for f in report.skipped:
            _err.print(f"[yellow]skipped:[/yellow] {escape(f.source)} ({escape(f.error)})")
        stored = len([f for f in report.files if f.status == "stored"])
        _out.print(
            f"onboarded [bold]{escape(report.chip)}[/bold]: {len(report.documents)} files ({stored} stored, "
            f"{len(report.documents) - stored} unchanged), {report.pages} pages, {report.chunks} chunks, "
            f"{len(report.skipped)} skipped, {len(report.failed)} failed in {report.seconds:.1f} s")
        if report.profile is not None:
            profile = report.profile
            if profile.error:
                _err.print(f"[red]profile not updated:[/red] {escape(profile.error)}")
            else:
                where = f"; saved {escape(profile.path)} (chiplore profile show {escape(report.chip)})" \
                    if profile.path else ""
                _out.print(f"hardware profile: {escape(profile.summary)}{where}")
                for line in profile.advice:
                    _out.print(escape(line))
    if not report.ok:
        raise typer.Exit(1)
    if report.failed:
        raise typer.Exit(ONBOARD_PARTIAL_EXIT)


@app.command("ask")
def ask_cmd(
    question: str = typer.Argument(..., help="The question, in quotes."),
    chip: str = typer.Option(None, "--chip", "-c", help="Only this chip's documents and findings."),
    k: int = typer.Option(5, "-k", "--top-k", help="Number of passages (1 to 100)."),
    as_json: bool = typer.Option(False, "--json", help="Print hits as JSON (docs/cli-json.md)."),
) -> None:
    """Hybrid (dense + BM25) search over documents and findings; prints passages with citations."""
    from knowledge.retrieval import search

    hits = search(question, chip=chip, k=k)
    if not hits:
        _refuse_an_empty_store()
    if as_json:
        _print_json({"schema": JSON_SCHEMA, "question": question, "chip": chip.lower() if chip else None, "k": k,
                     "hits": [dict(rank=i, **h.to_json()) for i, h in enumerate(hits, start=1)]})
        return
    if not hits:
        _out.print("no matching passages")
        return
    for i, hit in enumerate(hits, start=1):
        _out.print(f"[bold]\\[{i}][/bold] [cyan]{escape(hit.cite())}[/cyan]  [dim]{escape(hit.chip)} · "
                   f"{hit.collection} · score {hit.score:.4f}[/dim]")
        text = " ".join(hit.text.split())
        _out.print("    " + (text if len(text) <= 600 else text[:597] + "..."), markup=False)


def _refuse_an_empty_store() -> None:
    """An empty knowledge store is an error naming the store and the command that fills it (not 'no passages')."""
    from core.errors import BadInputError
    from knowledge.retrieval import default_store

    store = default_store()
    if not store.chips():
        raise BadInputError(f"ask: the knowledge store {store.location} is empty; onboard a chip's documents first "
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


