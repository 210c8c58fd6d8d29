"""Rich console output of `chiplore optimize`: one line per loop event, a progress bar, summary tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent.runstate import BaselineRecord, EvalRecord, RunState


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
                patterns = sorted({p.pattern_id for ps in ctx.patterns.values() for p in ps})
                cites = "; ".join(d.cite for d in ctx.documents[:2]) or "no document hits"
                print_(f"v{n} retrieved {len(ctx.documents)} document chunks, {len(patterns)} patterns "
                       f"({', '.join(patterns[:5])}), {len(ctx.findings)} findings [dim]({cites})[/dim]")
        elif event == "proposed":
            lineage = data["lineage"]
            print_(f"v{data['n']} proposed (parent {lineage.parent_id}, generation {lineage.generation}): "
                   f"{lineage.rationale[:160]}")
        elif event == "evaluated":
            self.progress.update(self.bar, completed=data["record"].n)
            print_(evaluation_line(data["record"]))
        elif event == "stop":
            print_(f"[bold]stopped[/bold] ({data['stop'].kind}): {data['stop'].reason}")


def evaluation_line(e: EvalRecord) -> str:
    """One line for an evaluation: stage, geomean, decision."""
    colour = "green" if e.accepted else ("yellow" if e.passed else "red")
    gm = f" geomean x{e.geomean_speedup:.2f}" if e.geomean_speedup else ""
    verdict = "ACCEPTED" if e.accepted else e.stage
    return f"{e.candidate_id} [{colour}]{verdict}[/{colour}]{gm}: {e.decision[:150]}"


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
