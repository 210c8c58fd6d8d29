"""``chiplore verify TASK FILE [--chip C] [--json]``: run the anti-cheat verifier on one candidate file.

Exit codes: 0 the candidate passed, 2 it was rejected (the verdict says at which stage and why), 1 bad input.
Without a GPU the candidate is checked for correctness under the Triton interpreter at small shapes and the
output says that nothing was timed.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import app
from agent.verifier import Verdict, Verifier, VerifyOptions
from knowledge.errors import BadInputError


def _profile(chip: str | None):
    if chip is None:
        return None
    from hardware_profiles import load_profile

    return load_profile(chip)


def _print_verdict(verdict: Verdict, console: Console) -> None:
    color = "green" if verdict.passed else "red"
    console.print(f"[bold {color}]{verdict.stage}[/]  {verdict.candidate}  ({verdict.task}, "
                  f"{verdict.device or 'no device'}, {verdict.verify_seconds:.1f} s)")
    for reason in verdict.reasons:
        console.print(f"  [red]reason[/] {reason}", soft_wrap=True)
    for flag in verdict.flags:
        console.print(f"  [yellow]flag[/] {flag}", soft_wrap=True)
    if verdict.errors:
        table = Table("case", "trials", "max abs err", "max rel err", "mismatch %", "tolerance", title="errors")
        for e in verdict.errors.values():
            table.add_row(e.case_id, str(e.trials), f"{e.max_abs_error:.3g}", f"{e.max_rel_error:.3g}",
                          f"{100 * e.mismatch_fraction:.2f}", f"{e.atol:g} + {e.rtol:g}*|ref|")
        console.print(table)
    if verdict.timings:
        table = Table("case", "time_us", "floor_us", "of floor", "speedup", "wall_us", "verifier wall_us",
                      title="timings (median)")
        for t in verdict.timings.values():
            speed = verdict.speedup.get(t.case_id)
            table.add_row(t.case_id, f"{t.time_us:.1f}", f"{t.floor_us:.1f}", f"{100 * t.fraction_of_floor:.1f}%",
                          f"{speed:.2f}x" if speed else "-", f"{t.wall_us:.1f}", f"{t.verifier_wall_us:.1f}")
        console.print(table)
    console.print(f"  timing: {verdict.timing_note}", soft_wrap=True)


@app.command("verify")
def verify_command(
    task: str = typer.Argument(..., help="task name, e.g. extend_attention"),
    file: Path = typer.Argument(..., help="candidate kernel file defining the task's entry point"),
    chip: str | None = typer.Option(None, "--chip", help="chip profile for the roofline gate, e.g. h200"),
    as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda"),
    cases: str = typer.Option("", "--cases", help="comma-separated bench/test case ids (default: all)"),
    with_baseline: bool = typer.Option(False, "--with-baseline",
                                       help="GPU: time the task's baseline first and report speedups"),
    reps: int = typer.Option(20, "--reps", help="timed calls per bench case (GPU)"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds before the candidate's process is killed"),
) -> None:
    """Verify a candidate kernel: static rules, sandboxed correctness on hidden inputs, timing, roofline gate."""
    if not file.is_file():
        raise BadInputError(f"candidate file {file}: no such file")
    if device not in ("auto", "cpu", "cuda"):
        raise BadInputError(f"--device {device!r}: expected auto, cpu or cuda")
    options = VerifyOptions(device=device, reps=reps, timeout_s=timeout,  # type: ignore[arg-type]
                            case_ids=tuple(c.strip() for c in cases.split(",") if c.strip()))
    profile = _profile(chip)
    console = Console(stderr=as_json)
    with Verifier(task, profile, options) as verifier:
        if with_baseline and verifier.device() == "cuda":
            module = verifier.task.baseline_module.replace(".", "/") + ".py"
            with console.status(f"verifying and timing the baseline {module} ..."):
                base = verifier.verify(verifier.root / module)
            if base.passed:
                verifier.options = options.model_copy(update={"baseline_time_us": base.time_us})
            else:
                console.print(f"[yellow]baseline did not pass ({base.stage}); no speedups[/]")
        with console.status(f"verifying {file} on {verifier.device()} ..."):
            verdict = verifier.verify(file)
    if as_json:
        typer.echo(verdict.model_dump_json(indent=2))
    else:
        _print_verdict(verdict, console)
    raise typer.Exit(0 if verdict.passed else 2)
