"""``chiplore mcp``: chiplore's knowledge base, profiles, patterns, verifier and run management as MCP tools, served
with the official `mcp` SDK (`mcp.server.MCPServer`) over stdio or streamable HTTP on 127.0.0.1.

Tools (schemas from the type hints, descriptions below written for a model): search_knowledge, get_profile,
rank_patterns, list_findings, profile_kernel, run_verification, start_run, submit_candidate, run_status,
finish_run; one prompt, ``optimize_kernel`` (the four-stage workflow and the anti-cheat rules for a task and chip,
template ``agent/templates/mcp_workflow.md.j2``). A failure is a tool error with one line (`one_line`); the server
itself never goes down on bad input. The same server object, called in-process, gives the tool-calling LLM
proposer its tools (`agent.proposers.llm_tools`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from agent.mcp.toolbox import Toolbox
from core.errors import ChiploreError

#: Tool names in the order they are listed.
TOOL_NAMES = ("search_knowledge", "get_profile", "rank_patterns", "list_findings", "profile_kernel",
              "run_verification", "start_run", "submit_candidate", "run_status", "finish_run")
PROMPT_NAME = "optimize_kernel"
log = logging.getLogger("chiplore.mcp")

Chip = Annotated[str, Field(description="chip name as onboarded or profiled, e.g. h200, mi300x")]
Task = Annotated[str, Field(description="kernel task, e.g. extend_attention")]
File = Annotated[str, Field(description="path of a candidate kernel file on the server (absolute, or relative "
                                        "to the server's working directory)")]
Cases = Annotated[list[str] | None, Field(description="case ids to restrict to: test cases on a CPU, bench cases "
                                                      "on a GPU (default: all)")]
Run = Annotated[str, Field(description="run id returned by start_run")]


def one_line(text: str, limit: int = 600) -> str:
    """`text` collapsed to one line of at most `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def validation_line(tool: str, exc: ValidationError) -> str:
    """``TOOL: argument NAME: MESSAGE (got VALUE)`` for the first invalid argument, and how many more."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(x) for x in first.get("loc", ()) if x != "arguments") or "arguments"
    got = first.get("input")
    shown = f" (got {got!r})" if first.get("type") != "missing" and not isinstance(got, dict) else ""
    more = f"; {len(errors) - 1} more invalid argument(s)" if len(errors) > 1 else ""
    return one_line(f"{tool}: argument {where}: {first.get('msg', 'invalid')}{shown}{more}")


def _guarded(name: str, fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """`fn` with every failure turned into a one-line `ToolError` (bad input verbatim; anything else named by type,
    logged with its traceback on stderr)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except ChiploreError as exc:
            raise ToolError(one_line(f"{name}: {exc}")) from None
        except ValidationError as exc:
            raise ToolError(validation_line(name, exc)) from None
        except Exception as exc:  # a bug or an environment failure: one line to the client, traceback to the log
            log.exception("tool %s failed", name)
            raise ToolError(one_line(f"{name}: internal error ({type(exc).__name__}: {exc})")) from None

    return call


class ChiploreServer(MCPServer):
    """`MCPServer` whose tool errors are one line: argument validation errors name the first bad argument."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(validation_line(name, cause)) from None
            if name not in TOOL_NAMES:
                raise ToolError(one_line(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")) from None
            text = str(exc).removeprefix(f"Error executing tool {name}: ")  # the SDK's prefix; ours names the tool
            raise ToolError(one_line(text)) from None


def build_server(toolbox: Toolbox) -> ChiploreServer:
    """The MCP server with every tool bound to `toolbox` and the ``optimize_kernel`` prompt."""
    server = ChiploreServer("chiplore", log_level="WARNING", instructions=(
        "chiplore: what is known about a GPU or accelerator (onboarded documents, a cited hardware profile, "
        "optimization patterns, verified findings) and an anti-cheat verifier for Triton kernels. Start with the "
        f"'{PROMPT_NAME}' prompt for a task and chip."))

    def search_knowledge(
        query: Annotated[str, Field(description="question or keywords, e.g. 'shared memory per block'")],
        chip: Annotated[str | None, Field(description="only this chip's documents and findings")] = None,
        k: Annotated[int, Field(ge=1, le=100, description="number of passages")] = 5,
    ) -> dict[str, Any]:
        """Search the chip documents and verified findings (hybrid dense + keyword retrieval). Returns passages,
        best first, each with its citation (file, page, section) and score. Cheap: tens of milliseconds."""
        return toolbox.search_knowledge(query, chip, k)

    def get_profile(chip: Chip) -> dict[str, Any]:
        """The chip's hardware profile: compute units, warp size, shared memory per block and per unit,
        registers, L2, memory bandwidth and capacity, clock, peak TFLOP/s per dtype. Every field has its value
        (null = unknown, never guessed), unit, kind (stated, derived, measured) and source (document, page or
        section, quoted phrase). Cheap."""
        return toolbox.get_profile(chip)

    def rank_patterns(
        chip: Chip, task: Task,
        case: Annotated[str | None, Field(description="one case id of the task (default: every bench case)")] = None,
    ) -> dict[str, Any]:
        """Optimization patterns (split-KV, GQA packing, pipelining, ...) ranked for this chip and each case, with
        parameters computed from the chip's profile, the kernel-family knobs they set, the modeled gain (a model,
        not a measurement) and the evidence behind them (findings and public examples). Cheap."""
        return toolbox.rank_patterns(chip, task, case)

    def list_findings(
        chip: Annotated[str | None, Field(description="only this chip")] = None,
        task: Annotated[str | None, Field(description="only this task")] = None,
        pattern: Annotated[str | None, Field(description="only findings that applied this pattern id")] = None,
    ) -> dict[str, Any]:
        """Verified results of earlier candidates: status (accepted, rejected, untimed, failed), patterns and
        parameters, baseline and candidate time in microseconds, speedup, fraction of the roofline floor, verdict
        stage and run. Failures are kept: they are knowledge too. Cheap."""
        return toolbox.list_findings(chip, task, pattern)

    def profile_kernel(task: Task, file: File, chip: Chip, cases: Cases = None) -> dict[str, Any]:
        """Verify a kernel file, then report per case its time (microseconds), roofline floor, fraction of the
        floor and bottleneck class (memory-bound, compute-bound, occupancy, launch-overhead). Costly: a full
        verification (seconds on a GPU, longer on a CPU). On a machine without a GPU nothing is timed: it says
        so and gives the floors and roofline sides from the profile only."""
        return toolbox.profile_kernel(task, file, chip, cases)

    def run_verification(task: Task, file: File, chip: Chip, cases: Cases = None) -> dict[str, Any]:
        """Run the anti-cheat verifier on a kernel file: static rules, then the file runs in a fresh sandboxed
        process on secret inputs (hidden shapes, perturbations) against the reference, then timing on a GPU. The
        verdict has its stage (static_rejected, compile_error, runtime_error, mismatch, too_fast_to_be_true,
        pass), its reasons verbatim, the errors per case and the times. Costly: seconds on a GPU."""
        return toolbox.run_verification(task, file, chip, cases)

    def start_run(
        task: Task, chip: Chip,
        cases: Annotated[list[str] | None, Field(description="bench case ids the run optimizes (default: all)")] = None,
    ) -> dict[str, Any]:
        """Start an optimization run with the bookkeeping of `chiplore optimize`: a run folder, the baseline
        kernel verified and timed (several seconds), stop rules (40 evaluations, 20 without gain). Returns the
        run id, the baseline file and times. Submit candidates with submit_candidate."""
        return toolbox.start_run(task, chip, cases)

    def submit_candidate(
        run: Run,
        source: Annotated[str, Field(description="the complete candidate file (Python): defines the task's entry "
                                                 "point with the baseline's exact signature")],
        patterns: Annotated[list[str] | None, Field(description="pattern ids the candidate applies")] = None,
        rationale: Annotated[str, Field(description="why this change should help, with citations")] = "",
        target_cases: Annotated[list[str] | None, Field(description="bench case ids it should speed up")] = None,
    ) -> dict[str, Any]:
        """Submit the next candidate of a run: written as kernel_v{N}.py, verified, then accepted (it becomes the
        best kernel) or rolled back by the run's rules: faster than the best beyond the measured noise on its
        target cases, no case more than 5% slower. The verdict's reasons come back verbatim and a finding is
        recorded either way. Costly: one verification (seconds on a GPU). Fails once the run has ended."""
        return toolbox.submit_candidate(run, source, patterns, rationale, target_cases)

    def run_status(run: Run) -> dict[str, Any]:
        """A run's status, stop reason, best kernel (id, file, times) and every evaluation with its stage,
        decision and reasons. Cheap."""
        return toolbox.run_status(run)

    def finish_run(run: Run) -> dict[str, Any]:
        """End a run and write its report (Markdown with the lineage of the best kernel, speedup and roofline
        plots, the best kernel file). Returns the paths."""
        return toolbox.finish_run(run)

    tools = {f.__name__: f for f in (search_knowledge, get_profile, rank_patterns, list_findings, profile_kernel,
                                     run_verification, start_run, submit_candidate, run_status, finish_run)}
    for name in TOOL_NAMES:
        server.add_tool(_guarded(name, tools[name]), name=name)

    @server.prompt(name=PROMPT_NAME, description="The four-stage optimization workflow (baseline, diagnose, code and "
                   "verify, roll back and converge) and the anti-cheat rules, filled in for a task and chip.")
    def optimize_kernel(task: Task, chip: Chip) -> str:
        return workflow_prompt(task, chip)

    return server


def workflow_prompt(task: str, chip: str, patience: int | None = None) -> str:
    """The ``optimize_kernel`` prompt text for `task` on `chip` (template ``mcp_workflow.md.j2``).

    Raises:
        BadInputError: unknown task or chip.
    """
    import inspect

    from agent.adapters import load_chip_profile
    from agent.config import AcceptanceRules, StopRules
    from agent.proposers.llm import bare_signature
    from agent.session import load_task_checked
    from agent.templates import render

    spec = load_task_checked(task)
    profile = load_chip_profile(chip)
    signature = inspect.signature(spec.load_entry_point("baseline"))
    stop = StopRules()
    return render("mcp_workflow.md.j2", task=spec.name, chip=profile.chip, entry_point=spec.entry_point,
                  signature=bare_signature(signature),
                  family_module=spec.family.module if spec.family is not None else "",
                  regression_pct=round(100 * AcceptanceRules().regression_limit),
                  patience=patience or stop.patience, max_evals=stop.max_evals)
