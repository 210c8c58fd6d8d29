"""``chiplore verify TASK FILE [--chip C] [--json]``: run the anti-cheat verifier on one candidate file.

A candidate file is a standalone Python file that defines the task's entry point at module level with exactly
the baseline's signature; for extend_attention: ``extend_attention_fwd`` as in kernels/extend_attention/baseline.py
(start from a copy of that file).

Exit codes: 0 the candidate passed, 2 it was rejected (the verdict says at which stage and why), 1 bad input
(a missing file or a directory, an unknown task, chip or case, an option out of range).
Without a GPU the candidate is checked for correctness under the Triton interpreter at small shapes and the
output says that nothing was timed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.status import Status
from rich.table import Column, Table

from agent.cli.app import app
from agent.cli.console import CliConsole, exit_code_if_stdout_closes
from core.errors import BadInputError

if TYPE_CHECKING:  # the verifier imports torch: only the command itself loads it (`chiplore --help` stays fast)
    from agent.verifier import Verdict, Verifier, VerifyOptions


def _profile(chip: str | None):
    if chip is None:
        return None
    from hardware_profiles import load_profile

    return load_profile(chip)


_OPTION_NAMES = {"reps": "--reps", "timeout_s": "--timeout", "device": "--device", "case_ids": "--cases"}


def _check_file(file: Path) -> None:
    """Raise BadInputError unless `file` is an existing regular file."""
    if file.is_dir():
        raise BadInputError(f"candidate file {file}: is a directory; give the kernel file (a .py file defining "
                            "the task's entry point)")
    if not file.is_file():
        raise BadInputError(f"candidate file {file}: no such file")


def _options(device: str, reps: int, timeout: float, case_ids: tuple[str, ...]) -> VerifyOptions:
    """`VerifyOptions` from the command-line values; a value the verifier refuses is one line naming the option.

    Raises:
        BadInputError: e.g. ``--reps 0: must be >= 3`` or ``--timeout -5: must be > 0 seconds``.
    """
    if not math.isfinite(timeout):
        raise BadInputError(f"--timeout {timeout:g}: must be a finite number of seconds")
    from agent.verifier import VerifyOptions

    try:
        return VerifyOptions(device=device, reps=reps, timeout_s=timeout,  # type: ignore[arg-type]
                             case_ids=case_ids)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        option = _OPTION_NAMES.get(field, field)
        value = {"reps": f"{reps}", "timeout_s": f"{timeout:g}"}.get(field, err.get("input"))
        ctx = err.get("ctx") or {}
        bounds = [f"{sym} {ctx[key]:g}" for key, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
                  if key in ctx]
        problem = f"must be {' and '.join(bounds)}" if bounds else str(err.get("msg", "invalid value")).lower()
        unit = " seconds" if field == "timeout_s" and bounds else ""
        raise BadInputError(f"{option} {value}: {problem}{unit}") from None


def _check_cases(verifier: Verifier, case_ids: tuple[str, ...]) -> None:
    """Raise BadInputError when a `--cases` id is not a case this verification would check
    (`agent.verify_cases.check_verify_cases`)."""
    from agent.verify_cases import check_verify_cases

    check_verify_cases(verifier.task, verifier.device() == "cuda", case_ids)


def _status_line(status: Status, label: str) -> Callable[[str], None]:
    """Progress callback for `Verifier.verify`: the spinner line shows `label`, the stage's count and the seconds
    since the start, so a slow or hanging candidate is visibly alive (the timeout is --timeout)."""
    started = time.monotonic()

    def update(message: str) -> None:
        status.update(f"{label}: {message} ({time.monotonic() - started:.0f} s)")

    return update


def _print_verdict(verdict: Verdict, console: Console) -> None:
    color = "green" if verdict.passed else "red"
    console.print(f"[bold {color}]{verdict.stage}[/]  {verdict.candidate}  ({verdict.task}, "
                  f"{verdict.device or 'no device'}, {verdict.verify_seconds:.1f} s)")
    for reason in verdict.reasons:
        console.print(f"  [red]reason[/] {reason}", soft_wrap=True)
    for flag in verdict.flags:
        console.print(f"  [yellow]flag[/] {flag}", soft_wrap=True)
    rows = [e for e in verdict.errors.values() if e.trials]  # cases compared at least once
    if rows:  # no heading over an empty table
        table = Table(_case_column([e.case_id for e in rows]), Column("n", justify="right"), "max abs", "max rel",
                      "bad %", Column("atol/rtol", no_wrap=True, min_width=13),
                      title="errors (n trials; bad: |got-ref| > atol + rtol*|ref|)")
        for e in rows:
            table.add_row(e.case_id, str(e.trials), f"{e.max_abs_error:.2g}", f"{e.max_rel_error:.2g}",
                          f"{100 * e.mismatch_fraction:.2f}", f"{e.atol:g}/{e.rtol:g}")
        console.print(table)
    if verdict.timings:
        table = Table(_case_column(list(verdict.timings)), "time_us", "floor_us", "of floor", "speedup", "wall_us",
                      "verifier wall_us", title="timings (median)")
        for t in verdict.timings.values():
            speed = verdict.speedup.get(t.case_id)
            table.add_row(t.case_id, f"{t.time_us:.1f}", f"{t.floor_us:.1f}", f"{100 * t.fraction_of_floor:.1f}%",
                          f"{speed:.2f}x" if speed else "-", f"{t.wall_us:.1f}", f"{t.verifier_wall_us:.1f}")
        console.print(table)
    console.print(f"  timing: {verdict.timing_note}", soft_wrap=True)


def _case_column(case_ids: list[str]) -> Column:
    """The case column, never wrapped or cut (ids are copied into ``--cases``); the other columns give way."""
    return Column("case", no_wrap=True, min_width=max((len(c) for c in case_ids), default=4))


@app.command("verify")
def verify_command(
    task: str = typer.Argument(..., help="task name, e.g. extend_attention"),
    file: Path = typer.Argument(..., help="candidate kernel file: defines the task's entry point at module level "
                                "with the baseline's signature (extend_attention: extend_attention_fwd; start from "
                                "a copy of kernels/extend_attention/baseline.py)"),
    chip: str | None = typer.Option(None, "--chip", help="chip profile for the roofline gate, e.g. h200"),
    as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda"),
    cases: str = typer.Option("", "--cases", help="comma-separated case ids: test cases on the CPU, bench cases "
                              "on a GPU (default: all)"),
    with_baseline: bool = typer.Option(False, "--with-baseline",
                                       help="GPU: time the task's baseline first and report speedups"),
    reps: int = typer.Option(20, "--reps", help="timed calls per bench case (GPU; at least 3)"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds before the candidate's process is killed"),
) -> None:
    """Verify a candidate kernel: static rules, sandboxed correctness on hidden inputs, timing, roofline gate.

    Exit code 0 = pass, 2 = rejected (stage and reasons printed), 1 = bad input.
    """
    _check_file(file)
    if device not in ("auto", "cpu", "cuda"):
        raise BadInputError(f"--device {device!r}: expected auto, cpu or cuda")
    options = _options(device, reps, timeout, tuple(c.strip() for c in cases.split(",") if c.strip()))
    profile = _profile(chip)
    console = CliConsole(stderr=as_json)
    from agent.verifier import Verifier

    with Verifier(task, profile, options) as verifier:
        _check_cases(verifier, options.case_ids)
        if with_baseline and verifier.device() == "cuda":
            module = verifier.task.baseline_module.replace(".", "/") + ".py"
            label = f"verifying and timing the baseline {module}"
            with console.status(f"{label} ...") as status:
                base = verifier.verify(verifier.root / module, progress=_status_line(status, label))
            if base.passed:
                verifier.options = options.model_copy(update={"baseline_time_us": base.time_us})
            else:
                console.print(f"[yellow]baseline did not pass ({base.stage}); no speedups[/]")
        label = f"verifying {file} on {verifier.device()}"
        with console.status(f"{label} ...") as status:
            verdict = verifier.verify(file, progress=_status_line(status, label))
    exit_code_if_stdout_closes(0 if verdict.passed else 2)
    if as_json:
        typer.echo(verdict.model_dump_json(indent=2))
    else:
        _print_verdict(verdict, console)
    raise typer.Exit(0 if verdict.passed else 2)
