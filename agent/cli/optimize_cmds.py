"""``chiplore optimize``, ``chiplore report``, ``chiplore bench`` and ``chiplore demo``.

Exit codes of ``optimize``: 0 = the run finished (a stop rule ended it: evaluations, patience, budget, roofline,
search space exhausted, a tool-calling model that stopped proposing, its token budget); 1 = error, one
``error: ...`` line (bad input, unknown chip or task, unreachable LLM endpoint, unreadable store or run state; when
it happens before the run starts, no run folder is created);
3 = the run stopped on an error it can be resumed from (LLM endpoint down during the run, the same verifier
failure over and over): the state is saved and ``error: run RUN stopped ...`` names the reason and the
``--resume`` command. ``report``: 0 = written, 1 = error line (unknown run, corrupt state, missing kernel file).

``optimize --json`` prints one JSON line (progress goes to stderr): ``{"run_id", "run_dir", "status", "stop_kind",
"stop_reason", "evaluations", "best_id", "geomean_speedup" (null when untimed), "timed", "report"}``;
``report --json`` prints ``{"markdown", "speedup_png", "roofline_png", "best_kernel", "dropin"}``.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from agent.cli.app import app
from agent.cli.console import CliConsole
from core.errors import BadInputError

if TYPE_CHECKING:  # pydantic models: imported by the commands that use them (`chiplore --help` stays fast)
    from agent.config import LLMOptions

_console = CliConsole()  # paths and progress lines are never broken mid-name when piped

#: Exit code of `optimize` when the run stopped on an error and can be resumed (see the module docstring).
EXIT_STOPPED = 3

NO_GPU_NOTICE = ("No GPU on this machine: correctness-only exploration under the Triton interpreter "
                 "(TRITON_INTERPRET=1) at small shapes; nothing is timed and no speedup is claimed.")


def has_gpu() -> bool:
    """A CUDA or ROCm device is visible to torch."""
    import torch

    return bool(torch.cuda.is_available())


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (Triton interpreter)"


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _llm_options(extra: str | None) -> LLMOptions:
    from agent.config import LLMOptions

    if not extra:
        return LLMOptions()
    try:
        body = json.loads(extra)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"--llm-extra: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(body, dict):
        raise BadInputError("--llm-extra: expected a JSON object, e.g. '{\"chat_template_kwargs\": {...}}'")
    return LLMOptions(extra_body=body)


@app.command("optimize")
def optimize_cmd(
    task: str = typer.Argument(None, help="kernel task, e.g. extend_attention (omit with --resume)"),
    chip: str = typer.Option(None, "--chip", help="chip profile to optimize for (omit with --resume)"),
    max_evals: int = typer.Option(None, "--max-evals", min=1, help="candidate evaluations (default 40)"),
    budget_min: float = typer.Option(None, "--budget-min", min=0.01,
                                     help="wall-clock budget in minutes over all sessions, checked before each new "
                                          "candidate (the baseline and a verification in progress always finish)"),
    no_retrieval: bool = typer.Option(False, "--no-retrieval", help="ablation: uniform choice, no knowledge"),
    resume: str = typer.Option(None, "--resume", help="continue run RUN (id or folder)"),
    proposer: str = typer.Option("offline", "--proposer", help="offline | llm | llm-tools | uniform"),
    cases: str = typer.Option(None, "--cases", help="comma-separated bench case ids (default: all)"),
    seed: int = typer.Option(0, "--seed", help="seed of the proposer's random choices"),
    patience: int = typer.Option(None, "--patience", min=1,
                                 help="evaluations without gain that stop a run (default 20)"),
    run_id: str = typer.Option(None, "--run-id", help="name of the new run (default: task-chip-time)"),
    llm_extra: str = typer.Option(None, "--llm-extra", help="JSON passed through to the LLM request body"),
    max_tool_calls: int = typer.Option(None, "--max-tool-calls", min=1,
                                       help="llm-tools: tool calls per candidate (default 16)"),
    max_turn_tokens: int = typer.Option(None, "--max-turn-tokens", min=1000,
                                        help="llm-tools: tokens per candidate (default 200000)"),
    max_run_tokens: int = typer.Option(None, "--max-run-tokens", min=1000,
                                       help="llm-tools: tokens over the run (default 5000000)"),
    verify_options: str = typer.Option(None, "--verify-options",
                                       help="JSON of verifier options for every verification, e.g. "
                                            "'{\"random_cases\": 1}'"),
    record_findings: bool = typer.Option(None, "--record-findings/--no-record-findings",
                                         help="write findings to the knowledge base (default: on when timed on a "
                                              "GPU; on the CPU, passes are recorded as 'untimed')"),
    report: bool = typer.Option(True, "--report/--no-report", help="write the report at the end"),
    as_json: bool = typer.Option(
        False, "--json", help="print a JSON summary (schema: docstring of agent/cli/optimize_cmds.py)"),
) -> None:
    """Optimize TASK for the chip named by --chip in a closed loop with retrieval; verified, checkpointed, resumable.

    Everything the run needs (task, cases, chip profile, knowledge store, proposer and its LLM endpoint) is checked
    before the run folder is created. Exit codes: 0 finished, 1 error (one line), 3 stopped on an error and
    resumable with --resume.
    """
    from agent.adapters import RealVerifier, StoreKnowledge, load_chip_profile
    from agent.cli.optimize_view import LoopPrinter, summary_table
    from agent.runstate import count
    from agent.session import load_task_checked, open_run, prepare, resume_run, run_prepared, select_cases, start_run

    console = CliConsole(stderr=True) if as_json else _console  # --json: stdout holds only the JSON line
    gpu = has_gpu()
    if resume:
        live, saved = open_run(resume)
        live.check_not_live()  # before anything else is checked or built: one line naming the pid
        config = saved.config
        if (task and task != config.task) or (chip and chip != config.chip):
            raise BadInputError(f"--resume {resume}: that run optimizes {config.task} on {config.chip}, "
                                f"not {task or config.task} on {chip or config.chip}")
        if config.timing == "gpu" and not gpu:
            raise BadInputError(f"--resume {resume}: that run is timed on a GPU and this machine has none")
        if config.proposer == "external":
            raise BadInputError(f"--resume {resume}: that run takes its candidates from an MCP client "
                                "(submit_candidate of `chiplore mcp`); continue it there")
    else:
        if not task or not chip:
            raise BadInputError("optimize needs TASK and --chip (or --resume RUN)")
        if proposer not in ("offline", "llm", "llm-tools", "uniform"):
            raise BadInputError(f"--proposer {proposer!r}: expected offline, llm, llm-tools or uniform")
        from agent.cli.mcp_cmds import parse_verify_options
        from agent.config import OptimizeConfig, StopRules, ToolBounds

        bounds = {k: v for k, v in (("tool_calls_per_iteration", max_tool_calls),
                                    ("tokens_per_iteration", max_turn_tokens), ("tokens_per_run", max_run_tokens))
                  if v is not None}
        config = OptimizeConfig(
            task=task, chip=chip, proposer=proposer, retrieval=not no_retrieval,
            timing="gpu" if gpu else "interpreter", cases=_split(cases), seed=seed,
            stop=StopRules(max_evals=max_evals or 40, patience=patience or 20, budget_min=budget_min),
            llm=_llm_options(llm_extra), record_findings=gpu if record_findings is None else record_findings,
            tool_bounds=ToolBounds(**bounds), verify_options=parse_verify_options(verify_options))
    if not gpu:
        os.environ["TRITON_INTERPRET"] = "1"
    select_cases(load_task_checked(config.task), config.cases)
    profile = load_chip_profile(config.chip)
    if gpu and profile.is_virtual:  # before the run folder exists: a partition this machine cannot realise
        from hardware_profiles.virtual import check_host

        check_host(profile)
    knowledge, notes = None, []
    if config.retrieval:
        knowledge = StoreKnowledge(profile)
        notes = knowledge.check()
    verifier, parts = RealVerifier(), None
    try:
        parts = prepare(config, profile, verifier, knowledge, check=True)
        if not gpu:
            console.print(f"[yellow]{NO_GPU_NOTICE}[/yellow]")
        for note in notes:
            console.print(f"[yellow]{escape(note)}[/yellow]")
        if not config.record_findings:
            console.print("findings of this run are not recorded (pass --record-findings to keep them)")
        if resume:
            run, state = resume_run(resume, max_evals=max_evals, budget_min=budget_min, patience=patience)
            console.print(f"resuming run {state.run_id} after {count(len(state.evaluations), 'evaluation')}"
                          + (f" (candidate v{state.pending.n} was being evaluated)" if state.pending else ""))
        else:
            run, state = start_run(config, device=device_name(), run_id=run_id)
            console.print(escape(f"run {state.run_id}: {run.path}"))
        with LoopPrinter(console, state) as printer:
            state = run_prepared(run, state, parts, events=printer)
    finally:
        verifier.close()
        if parts is not None and hasattr(parts.proposer, "close"):
            parts.proposer.close()  # the tool-calling proposer's own verifier sandboxes
    for note in getattr(knowledge, "warnings", []):
        console.print(f"[yellow]{escape(note)}[/yellow]")
    console.print(summary_table(state))
    files = None
    if report:
        from agent.report import write_report

        files = write_report(run)
        console.print(f"report: {files.markdown}")
    if as_json:
        best, timed = state.best_record(), bool(state.baseline and state.baseline.timed)
        typer.echo(json.dumps({
            "run_id": state.run_id, "run_dir": str(run.path), "status": state.status, "stop_kind": state.stop_kind,
            "stop_reason": state.stop_reason, "evaluations": len(state.evaluations), "best_id": state.best_id,
            "geomean_speedup": best.geomean_speedup if best else (1.0 if timed else None),
            "timed": timed,
            "report": str(files.markdown) if files else None}))
    if state.status == "stopped":
        typer.secho(f"error: run {state.run_id} stopped ({state.stop_kind}): {state.stop_reason}; "
                    f"resume with: chiplore optimize --resume {state.run_id}", fg=typer.colors.RED, err=True)
        raise typer.Exit(EXIT_STOPPED)


@app.command("report")
def report_cmd(
    run: str = typer.Argument(..., help="run id (under $CHIPLORE_HOME/runs) or run folder"),
    as_json: bool = typer.Option(False, "--json", help="print the written paths as JSON"),
) -> None:
    """Write the Markdown report, the PNG plots and the SGLang drop-in of a run's best kernel."""
    from agent.report import write_report
    from agent.runstate import RunDir

    files = write_report(RunDir.open(run))
    paths = {"markdown": str(files.markdown), "speedup_png": str(files.speedup_png),
             "roofline_png": str(files.roofline_png), "best_kernel": str(files.best_kernel),
             "dropin": str(files.dropin) if files.dropin else None}
    if as_json:
        typer.echo(json.dumps(paths))
        return
    for name, path in paths.items():
        if path:
            _console.print(f"{name}: {path}", markup=False)
    if not paths["dropin"]:
        _console.print("dropin: none (no kernel beat the baseline, or the task names no drop-in target; "
                       "report.md says which)", markup=False)


@app.command("bench")
def bench_cmd(
    task: str = typer.Argument(..., help="kernel task, e.g. extend_attention"),
    chip: str = typer.Option(..., "--chip", help="chip profile: the kernels' limits, roofline floors, partition"),
    cases: str = typer.Option(None, "--cases", help="comma-separated bench case ids (default: all)"),
    reps: int = typer.Option(20, "--reps", min=1, help="timed calls per case"),
    as_json: bool = typer.Option(False, "--json", help="print rows as JSON"),
) -> None:
    """Time the task's baseline and optimized kernels on its bench cases (needs a GPU)."""
    from agent.bench import bench_task, rows_table

    if not has_gpu():
        raise BadInputError("bench needs a GPU: nothing is timed on the CPU (use `chiplore verify` for correctness)")
    rows = bench_task(task, chip, _split(cases), reps)
    if as_json:
        typer.echo(json.dumps({"device": device_name(), "rows": rows}))
    else:
        _console.print(rows_table(rows))


@app.command("demo")
def demo_cmd(
    max_evals: int = typer.Option(None, "--max-evals", min=1, help="evaluations (default: 3 on CPU, 20 on GPU)"),
) -> None:
    """Onboard the shipped chip notes, ask a question, list patterns, then optimize extend attention."""
    from typer.main import get_command

    from agent.demo import run_demo

    def command(args: list[str]) -> None:
        get_command(app).main(args=args, prog_name="chiplore", standalone_mode=False)

    run_demo(_console, command, max_evals or (20 if has_gpu() else 3), gpu=has_gpu())

