"""Assembling a run: cases, family space, proposer and loop, for a new run or a resumed one.

The CLI and the tests go through here, so what a test drives is what `chiplore optimize` runs; only the
verifier and knowledge base are passed in (the real ones from `agent.adapters`, scripted ones in tests).
"""

from __future__ import annotations

from pathlib import Path

from agent.config import OptimizeConfig
from agent.family_space import FamilySpace
from agent.loop import Events, LoopParts, OptimizationLoop
from agent.proposers.base import Proposer
from agent.proposers.offline import PatternGuidedProposer
from agent.proposers.uniform import UniformProposer
from agent.runstate import RunDir, RunState, new_run_id
from agent.seams import Knowledge, Verifier
from core.errors import BadInputError
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec, load_task


def load_task_checked(name: str) -> TaskSpec:
    """`load_task` with a one-line `BadInputError` for an unknown task."""
    try:
        return load_task(name)
    except KeyError as exc:
        raise BadInputError(str(exc.args[0])) from None


def select_cases(task: TaskSpec, ids: list[str] | None) -> list[Case]:
    """The task's bench cases, or those named in `ids` (in that order).

    Raises:
        BadInputError: an id that is not a bench case; the message lists the bench case ids.
    """
    bench = {c.id: c for c in task.bench_cases}
    if not ids:
        return list(task.bench_cases)
    unknown = [i for i in ids if i not in bench]
    if unknown:
        raise BadInputError(f"unknown case(s) {', '.join(unknown)} for task {task.name!r}; "
                            f"bench cases: {', '.join(bench)}")
    return [bench[i] for i in ids]


def make_proposer(config: OptimizeConfig, space: FamilySpace | None, check: bool = False) -> Proposer:
    """``llm`` -> `LLMProposer`; ``llm-tools`` -> `ToolCallingProposer`; ``external`` -> `ExternalProposer`
    (candidates submitted through `agent.run_api`); retrieval off or ``uniform`` -> `UniformProposer`; else
    pattern-guided.
    With `check`, a proposer that talks to a service is checked now (`LLMProposer.check`).

    Raises:
        BadInputError: a family proposer for a task without a kernel family.
        ProposerConfigError: the LLM proposer has no model, or (with `check`) its endpoint is unreachable or
            refuses the API key.
    """
    if config.proposer in ("llm", "llm-tools"):
        if config.proposer == "llm":
            from agent.proposers.llm import LLMProposer

            proposer = LLMProposer(config.llm)
        else:
            from agent.proposers.llm_tools import ToolCallingProposer

            proposer = ToolCallingProposer(config.llm, config.tool_bounds, config.verify_options,
                                           retrieval=config.retrieval)
        if check:
            proposer.check()
        return proposer
    if config.proposer == "external":
        from agent.run_api import ExternalProposer

        return ExternalProposer()
    if space is None:
        raise BadInputError(f"task {config.task!r} has no kernel family; use --proposer llm")
    if config.proposer == "uniform" or not config.retrieval:
        return UniformProposer(space)
    return PatternGuidedProposer(space)


def start_run(config: OptimizeConfig, device: str = "", run_id: str | None = None, root: Path | None = None
              ) -> tuple[RunDir, RunState]:
    """Create the run folder and its first state (saved). Call it after `prepare`, so a run that cannot start
    leaves no folder behind."""
    load_task_checked(config.task)
    run = RunDir.create(run_id or new_run_id(config.task, config.chip), root)
    run.lock()
    state = RunState(run_id=run.run_id, config=config, device=device)
    run.save_state(state)
    return run, state


def prepare(config: OptimizeConfig, profile: HardwareProfile, verifier: Verifier, knowledge: Knowledge | None,
            proposer: Proposer | None = None, check: bool = False) -> LoopParts:
    """The parts of a run of `config`, built (and with `check`, the proposer's service checked) before any run
    folder is created or touched. `knowledge` is dropped when the config has retrieval off; `proposer`
    overrides `make_proposer` (tests inject a scripted model this way).

    Raises:
        BadInputError: unknown task or case; ProposerConfigError: see `make_proposer`.
    """
    task = load_task_checked(config.task)
    cases = select_cases(task, config.cases)
    space = FamilySpace(task, profile, cases) if task.knobs and task.family is not None else None
    return LoopParts(task=task, profile=profile, cases=cases, verifier=verifier,
                     proposer=proposer or make_proposer(config, space, check),
                     knowledge=knowledge if config.retrieval else None, space=space)


def run_prepared(run: RunDir, state: RunState, parts: LoopParts, events: Events | None = None) -> RunState:
    """Run (or resume) `state` with `parts` (from `prepare`) to its end; returns the final state (also saved)."""
    if events is not None:
        parts.events = events
    run.lock()  # held already when the run came from `start_run` / `resume_run`
    try:
        return OptimizationLoop(run, state, parts).run_loop()
    finally:
        run.unlock()


def run_optimization(run: RunDir, state: RunState, profile: HardwareProfile, verifier: Verifier,
                     knowledge: Knowledge | None, events: Events | None = None,
                     proposer: Proposer | None = None) -> RunState:
    """`prepare` then `run_prepared`: run (or resume) `state` to its end; returns the final state."""
    return run_prepared(run, state, prepare(state.config, profile, verifier, knowledge, proposer), events)


def open_run(run: str | Path, root: Path | None = None) -> tuple[RunDir, RunState]:
    """Open a run and read its state without changing anything, checking that it can be continued.

    Raises:
        RunNotFoundError: no such run. RunCorruptError: unreadable state, or the best kernel file it names is
            missing (checked once the baseline is verified; before that ``kernel_v0.py`` is written by the loop).
    """
    folder = RunDir.open(run, root)
    state = folder.load_state()
    if state.baseline is not None:
        folder.best_kernel(state)
    return folder, state


def resume_run(run: str | Path, root: Path | None = None, max_evals: int | None = None,
               budget_min: float | None = None, patience: int | None = None) -> tuple[RunDir, RunState]:
    """Open a run to continue it; `max_evals` / `budget_min` / `patience` replace the saved stop rules when given
    (a finished run continues under the new rules until one of them fires).

    Raises:
        RunNotFoundError, RunCorruptError: see `open_run`. RunBusyError: the run is live in another process (its
            lock names the pid); nothing is written then.
    """
    folder, state = open_run(run, root)
    folder.lock("resuming")
    state = folder.load_state()  # as the last holder left it
    updates = {k: v for k, v in (("max_evals", max_evals), ("budget_min", budget_min), ("patience", patience))
               if v is not None}
    if updates:
        state.config = state.config.model_copy(update={"stop": state.config.stop.model_copy(update=updates)})
    state.resumes += 1
    folder.save_state(state)
    return folder, state
