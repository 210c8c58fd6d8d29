"""``chiplore store check`` and ``chiplore store repair``: is every record in the vector index, is every onboarding
complete; rebuild what chromadb's records allow (`knowledge.store_check`) and finish interrupted onboardings
(`ingest.onboard.repair_interrupted`).

Exit codes: ``check`` 0 = healthy, 1 = problems found (each on one line, then what to run); ``repair`` 0 = healthy
afterwards, 1 = what could not be repaired (one line each). Source names are printed in full (`_print_in_full`).
"""

from __future__ import annotations

import json

import typer
from rich.table import Table
from rich.text import Text

from agent.cli.app import app
from agent.cli.console import CliConsole
from core.text import printable

store_app = typer.Typer(help="Check the knowledge store against its vector index and journal, and repair it.",
                        no_args_is_help=True)
app.add_typer(store_app, name="store")
_out = CliConsole(highlight=False)
_err = CliConsole(stderr=True, highlight=False)


def _open(check_files: bool):
    from knowledge.store import KnowledgeStore

    return KnowledgeStore.open(check_files=check_files)


@store_app.command("check")
def check_cmd(as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (docs/cli-json.md).")
              ) -> None:
    """Counts per collection and per source: records, records with a vector in the index, the journal's count;
    empty index files, interrupted onboardings. Reads only."""
    from knowledge.store_check import check_store

    report = check_store(_open(check_files=False))
    if as_json:
        typer.echo(json.dumps({"schema": 1, **report.to_json()}, ensure_ascii=False, indent=2))
    else:
        table = Table(title=Text(printable(report.location)))
        for col in ("collection", "chip", "source", "records", "in index", "journal"):
            table.add_column(col, justify="right" if col in ("records", "in index") else "left")
        for c in report.collections:
            table.add_row(c.name, "", "(all)", str(c.records), str(c.indexed), c.error and "unreadable")
        for s in report.sources:
            journal = s.journal if s.expected is None else f"{s.journal} ({s.expected})"
            table.add_row(s.collection, Text(printable(s.chip)), Text(printable(s.source)), str(s.records),
                          str(s.indexed), journal)
        _print_in_full(table)
        for line in report.problems:
            _err.print(Text.assemble(("problem: ", "red"), printable(line)))
    if not report.ok:
        if not as_json:
            _err.print("run `chiplore store repair` to rebuild the index and finish interrupted onboardings")
        raise typer.Exit(1)


def _print_in_full(table: Table) -> None:
    """Print `table` with every cell in full, never cut with an ellipsis: on a terminal within its width (a long
    source name folds onto more lines of its cell); to a pipe or a file, which cut no line, at the table's natural
    width, whatever ``COLUMNS`` says (each name on one line, as `grep` and a log reader need it)."""
    from rich.measure import Measurement

    for column in table.columns:
        column.overflow = "fold"  # a cell narrower than its text wraps it, even inside a word; never an ellipsis
        column.no_wrap = column.header in ("collection", "records", "in index")  # short: the names give way first
    if _out.is_terminal:
        _out.print(table)
        return
    natural = Measurement.get(_out, _out.options.update_width(1_000_000), table).maximum
    CliConsole(highlight=False, width=max(natural, _out.width)).print(table)


@store_app.command("repair")
def repair_cmd() -> None:
    """Rebuild missing or damaged vector indexes from the stored records (intact vectors are kept, the others come
    from the vector cache or are embedded again), then onboard again every file whose onboarding was interrupted
    (or remove its partial chunks when the file is gone). Holds the writer lock."""
    from ingest.onboard import repair_interrupted
    from knowledge.store_check import check_store, repair_store

    store, done = repair_store(_open(check_files=False))
    for path in done.moved:
        _err.print(Text(f"moved a damaged index aside: {printable(path)}"))
    _out.print(f"vector index: {done.intact} intact, {done.restored} restored ({done.from_cache} from the vector "
               f"cache, {done.salvaged} read from the damaged index, {done.embedded} embedded again)")
    files = repair_interrupted(store)
    for f in files:
        if f.status == "failed":
            _err.print(Text.assemble(("error: ", "red"), printable(f.error)))
        else:
            _out.print(Text(f"onboarded again: {printable(f.source)} ({f.chunks} chunks)"))
    report = check_store(store)
    for line in report.problems:
        _err.print(Text.assemble(("problem: ", "red"), printable(line)))
    if not report.ok or any(f.status == "failed" for f in files):
        raise typer.Exit(1)
    _out.print("store is healthy")
