"""Rich console output of `chiplore optimize`: one line per loop event, a progress bar, summary tables."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent.runstate import BaselineRecord, EvalRecord, RunState, count
from knowledge.types import VERDICT_STAGES


class LoopPrinter:
    """Receives the loop's events (`agent.loop.LoopParts.events`) and prints them under a progress bar."""

    def __init__(self, console: Console, state: RunState) -> None:
        self.console = console
        self.progress = Progress(TextColumn("[bold]optimize[/bold]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("evaluations"), TimeElapsedColumn(), console=console, transient=True)
        self.bar = self.progress.add_task("evals", total=state.config.stop.max_evals,
                                          completed=len(state.evaluations))

    def __enter__(self) -> LoopPrinter:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def __call__(self, event: str, **data: Any) -> None:
        print_ = self.progress.console.print
        if event == "baseline":
            print_(f"baseline: verifying{' and timing' if data['timed'] else ''} ({data['repeat']}/{data['of']})")
        elif event == "baseline_done":
            print_(baseline_table(data["record"]))
        elif event == "retrieved":
            ctx, n = data["context"], data["n"]
            if ctx.enabled:
                print_(retrieval_line(n, ctx))
        elif event == "proposed":
            lineage = data["lineage"]
            print_(f"v{data['n']} proposed (parent {lineage.parent_id}, generation {lineage.generation}): "
                   f"{shorten(lineage.rationale, 160)}")
        elif event == "evaluated":
            self.progress.update(self.bar, completed=data["record"].n)
            print_(evaluation_line(data["record"]))
        elif event == "stop":
            print_(f"[bold]stopped[/bold] ({data['stop'].kind}): {escape(data['stop'].reason)}")


def shorten(text: str, width: int) -> str:
    """`text` on one line, cut at a word boundary to at most `width` characters (`...` marks a cut), with rich
    markup escaped (rationales and citations hold brackets such as ``[public_result]``)."""
    return escape(textwrap.shorten(text, width=width, placeholder=" ...")) if text.strip() else ""


def retrieval_line(n: int, ctx: Any) -> str:
    """What was retrieved for candidate `n`: counts, every distinct pattern, and up to two distinct document
    citations."""
    patterns = sorted({p.pattern_id for ps in ctx.patterns.values() for p in ps})
    cites = escape("; ".join(list(dict.fromkeys(d.cite for d in ctx.documents))[:2]) or "no document hits")
    names = escape(f" ({', '.join(patterns)})") if patterns else ""
    return (f"v{n} retrieved {count(len(ctx.documents), 'document chunk')}, {count(len(patterns), 'pattern')}"
            f"{names}, {count(len(ctx.findings), 'finding')} [dim]({cites})[/dim]")


def evaluation_line(e: EvalRecord) -> str:
    """One line for an evaluation, labelled by what is known about it: ``ACCEPTED`` or ``rejected`` (verified and
    timed; with the geomean speedup), ``passed, not timed`` (verified where nothing is timed: no speed figure),
    ``failed verification (STAGE)`` or ``failed candidate (STAGE)`` (never became a verifiable kernel), then the
    decision or the first failure reason."""
    if e.accepted:
        label, colour = "ACCEPTED", "green"
    elif e.passed:
        label, colour = ("rejected", "yellow") if e.timed else ("passed, not timed", "cyan")
    else:
        label = f"failed {'verification' if e.stage in VERDICT_STAGES else 'candidate'} ({e.stage})"
        colour = "red"
    gm = f" geomean x{e.geomean_speedup:.2f}" if e.passed and e.timed and e.geomean_speedup else ""
    text = e.reasons[0] if not e.passed and e.reasons else e.decision
    return f"{e.candidate_id} [{colour}]{escape(label)}[/{colour}]{gm}: {shorten(text, 150)}"


def baseline_table(b: BaselineRecord) -> Table | str:
    """Per-case baseline times, roofline floors and noise (or a one-line note when untimed)."""
    if not b.timed:
        return "baseline: verified correct; not timed on this machine"
    table = Table(title="baseline", show_lines=False)
    for col in ("case", "time us", "floor us", "% of floor", "noise"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for case, t in b.time_us.items():
        floor = b.floor_us.get(case)
        table.add_row(case, f"{t:.1f}", f"{floor:.1f}" if floor else "-",
                      f"{100 * floor / t:.1f}" if floor else "-", f"{100 * b.noise.get(case, 0):.1f}%")
    return table


def summary_table(state: RunState) -> Table | str:
    """Per-case baseline vs best, speedups and roofline fractions of a finished run."""
    b = state.baseline
    if b is None or not b.timed:
        passed = sum(e.passed for e in state.evaluations)
        return (f"correctness-only run: {passed} of {len(state.evaluations)} candidates passed the verifier; "
                f"nothing was timed and no speedup is claimed")
    best = state.best_record()
    table = Table(title=f"best kernel {state.best_id}" + (f": geomean x{best.geomean_speedup:.2f}" if best else ""))
    for col in ("case", "baseline us", "best us", "speedup", "% of floor"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for case, t0 in b.time_us.items():
        t1 = state.best_time_us.get(case, t0)
        floor = b.floor_us.get(case)
        table.add_row(case, f"{t0:.1f}", f"{t1:.1f}", f"x{t0 / t1:.2f}",
                      f"{100 * floor / t0:.1f} -> {100 * floor / t1:.1f}" if floor else "-")
    return table
