"""`chiplore report RUN`: a Markdown summary, two PNG plots and the best kernel as a drop-in package.

Written to ``<run>/report/``: ``report.md`` (template ``report.md.j2``), ``speedup.png`` (geomean speedup over the
baseline at every evaluation, with the best so far), ``roofline.png`` (fraction of the roofline floor per case,
baseline vs best) and ``dropin/<package>/`` (`agent.dropin`; the package the task's `kernels.task.DropIn` names).
Untimed runs (Triton interpreter) get no speedup figures.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from agent.acceptance import geomean  # noqa: E402
from agent.dropin import write_dropin  # noqa: E402
from agent.errors import RunCorruptError  # noqa: E402
from agent.runstate import EvalRecord, RunDir, RunState  # noqa: E402
from agent.templates import render  # noqa: E402
from core.atomic_io import atomic_write_text  # noqa: E402
from core.errors import BadInputError  # noqa: E402
from kernels.task import load_task  # noqa: E402


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by `write_report`."""

    markdown: Path
    speedup_png: Path
    roofline_png: Path
    best_kernel: Path
    dropin: Path | None


def best_so_far(state: RunState) -> list[tuple[int, float]]:
    """(evaluation n, geomean speedup of the best kernel after it) for every evaluation; 1.0 = baseline."""
    out, best = [], 1.0
    for e in state.evaluations:
        if e.accepted and e.geomean_speedup:
            best = e.geomean_speedup
        out.append((e.n, best))
    return out


def evals_to_fraction_of(state: RunState, target: float) -> int | None:
    """First evaluation after which the best kernel's geomean speedup is >= `target` (None: never)."""
    for n, best in best_so_far(state):
        if best >= target:
            return n
    return None


def lineage_chain(run: RunDir, state: RunState) -> list[dict[str, Any]]:
    """The best kernel's ancestry from the baseline: id, generation, patterns, rationale, speedup."""
    chain, current = [], state.best_id
    records = {e.candidate_id: e for e in state.evaluations}
    while current and current != "v0":
        lineage = run.read_lineage(int(current[1:]))
        if lineage is None:
            break
        record = records.get(current)
        chain.append({"id": current, "generation": lineage.generation, "patterns": lineage.patterns,
                      "rationale": lineage.rationale, "geomean": record.geomean_speedup if record else None})
        current = lineage.parent_id
    return list(reversed(chain))


def plot_speedup(state: RunState, path: Path) -> None:
    """Geomean speedup over the baseline per evaluation (accepted, rejected, failed) and the best so far."""
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    timed = [e for e in state.evaluations if e.geomean_speedup]
    if timed:
        for accepted, style in ((False, dict(color="0.6", marker="o", s=18, label="verified, rolled back")),
                                (True, dict(color="tab:green", marker="o", s=36, label="accepted"))):
            pts = [e for e in timed if e.accepted == accepted]
            if pts:
                ax.scatter([e.n for e in pts], [e.geomean_speedup for e in pts], zorder=3, **style)
        failed = [e.n for e in state.evaluations if not e.passed]
        if failed:  # no speed figure: drawn on the bottom edge, not at a speedup
            ax.scatter(failed, [0.03] * len(failed), color="tab:red", marker="x", s=24, zorder=3,
                       transform=ax.get_xaxis_transform(), clip_on=False, label="failed (not timed)")
        steps = best_so_far(state)
        ax.step([0] + [n for n, _ in steps], [1.0] + [b for _, b in steps], where="post", color="tab:blue",
                label="best so far")
        ax.axhline(1.0, color="k", lw=0.8, ls=":")
        ax.set_ylabel("geomean speedup over baseline (x)")
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "not timed on this machine (correctness-only run):\nno speedup is claimed",
                ha="center", va="center", transform=ax.transAxes)
        passed = [e.n for e in state.evaluations if e.passed]
        failed = [e.n for e in state.evaluations if not e.passed]
        ax.scatter(passed, [1] * len(passed), color="tab:green", marker="o", label="verified correct")
        ax.scatter(failed, [0] * len(failed), color="tab:red", marker="x", label="failed")
        ax.set_yticks([0, 1], ["failed", "passed"])
        ax.set_ylim(-0.5, 1.5)
        if passed or failed:
            ax.legend(loc="center right", fontsize=8)
    ax.set_xlabel("evaluation")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # evaluations are counted, never fractional
    ax.set_title(f"{state.config.task} on {state.config.chip}: run {state.run_id}", fontsize=9)
    _save_figure(fig, path)


def plot_roofline(state: RunState, path: Path) -> None:
    """Fraction of the roofline floor per case: baseline vs best kernel (grouped bars, percent)."""
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    base = state.baseline.roofline_fraction if state.baseline else {}
    floors = state.baseline.floor_us if state.baseline else {}
    best = {c: floors[c] / t for c, t in state.best_time_us.items() if c in floors and t > 0}
    cases = list(base)
    if cases:
        x = range(len(cases))
        ax.bar([i - 0.2 for i in x], [100 * base[c] for c in cases], width=0.4, label="baseline", color="0.6")
        ax.bar([i + 0.2 for i in x], [100 * best.get(c, 0) for c in cases], width=0.4,
               label=f"best ({state.best_id})", color="tab:blue")
        ax.set_xticks(list(x), cases, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("% of roofline floor")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "not timed on this machine: no roofline fractions", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_title(f"roofline fraction per case ({state.config.chip} profile peaks)", fontsize=9)
    _save_figure(fig, path)


def _save_figure(fig: plt.Figure, path: Path) -> None:
    """Save `fig` as PNG at `path` atomically (temp file in the same folder, then rename) and close it."""
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            fig.savefig(handle, format="png")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)


def _case_rows(state: RunState) -> list[dict[str, Any]]:
    base = state.baseline
    rows = []
    for case, t0 in (base.time_us.items() if base else []):
        t1 = state.best_time_us.get(case, t0)
        floor = base.floor_us.get(case)
        rows.append({"case": case, "baseline_us": t0, "best_us": t1, "speedup": t0 / t1, "floor_us": floor,
                     "base_fraction": base.roofline_fraction.get(case), "best_fraction": floor / t1 if floor else None})
    return rows


def _retrieval_summary(run: RunDir, state: RunState) -> list[dict[str, Any]]:
    rows = []
    for e in state.evaluations:
        log = run.read_retrieval(e.n) or {}
        patterns = sorted({p["pattern_id"] for ps in log.get("patterns", {}).values() for p in ps})
        cites = list(dict.fromkeys(d["cite"] for d in log.get("documents", [])))  # one entry per section
        rows.append({"n": e.n, "enabled": log.get("enabled", False), "documents": cites[:3],
                     "patterns": patterns, "findings": len(log.get("findings", []))})
    return rows


def write_report(run: RunDir) -> ReportFiles:
    """Write the report of `run` under ``<run>/report/``; returns the paths. Every file is written atomically;
    the inputs are checked before anything is written.

    Raises:
        RunCorruptError: the run state or a file it names is unreadable, or the best kernel's file is missing.
        BadInputError: the run has nothing to report yet (its baseline was never verified).
    """
    state = run.load_state()
    best_n = int(state.best_id[1:])
    if state.baseline is None and not run.candidate_path(best_n).is_file():
        raise BadInputError(f"run {run.run_id!r}: nothing to report yet, its baseline was never verified "
                            f"(continue it with `chiplore optimize --resume {run.run_id}`)")
    best_source = run.best_kernel(state)
    try:
        best_text = best_source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunCorruptError(f"run {run.run_id!r}: the best kernel {best_source} cannot be read "
                              f"({getattr(exc, 'strerror', None) or 'not UTF-8 text'})") from None
    out = run.path / "report"
    out.mkdir(exist_ok=True)
    speedup_png, roofline_png = out / "speedup.png", out / "roofline.png"
    plot_speedup(state, speedup_png)
    plot_roofline(state, roofline_png)
    best_kernel = out / f"{state.config.task}_best_{state.best_id}.py"
    atomic_write_text(best_kernel, best_text)
    try:
        task = load_task(state.config.task)
    except KeyError as exc:
        raise RunCorruptError(f"run {run.run_id!r}: {exc.args[0]}") from None
    dropin = (write_dropin(best_source, out / "dropin", task.dropin, task.entry_point)
              if best_n and task.dropin is not None else None)
    best = state.best_record()
    final = best_geomean(state)
    timed = bool(state.baseline and state.baseline.timed)
    text = render(
        "report.md.j2", state=state, rows=_case_rows(state), timed=timed, final=final,
        geomean_fraction=_geomean_fraction(state),
        evals_95=evals_to_fraction_of(state, 0.95 * best.geomean_speedup) if best and best.geomean_speedup else None,
        chain=lineage_chain(run, state), evaluations=state.evaluations, retrieval=_retrieval_summary(run, state),
        counts=_counts(state.evaluations), best_kernel=best_kernel.name,
        dropin=task.dropin if dropin is not None else None, entry_point=task.entry_point,
        findings=len(state.findings_recorded), model_usage=model_usage(state))
    markdown = out / "report.md"
    atomic_write_text(markdown, text)
    return ReportFiles(markdown, speedup_png, roofline_png, best_kernel, dropin)


def model_usage(state: RunState) -> dict[str, Any] | None:
    """Tokens, requests and tool calls of a tool-calling model over the run (summed from each evaluation's
    ``usage``, which counts the responses' ``usage``), with the run's bounds; None for other proposers."""
    if state.config.proposer != "llm-tools":
        return None
    totals: dict[str, int] = {}
    for e in state.evaluations:
        for key, value in (e.parameters.get("usage") or {}).items():
            totals[key] = totals.get(key, 0) + int(value)
    return {"totals": totals, "bounds": state.config.tool_bounds.model_dump(),
            "budget_min": state.config.stop.budget_min, "model": state.config.llm.resolved_model()}


def best_geomean(state: RunState) -> float:
    """Geomean over cases of baseline time / best kernel time, the best kernel's time being the median of its
    replicates (`agent.reference`); 1.0 when nothing was timed."""
    base = state.baseline.time_us if state.baseline else {}
    ratios = [base[c] / t for c, t in state.best_time_us.items() if c in base and t > 0]
    return geomean(ratios) if ratios and state.baseline.timed else 1.0


def _geomean_fraction(state: RunState) -> tuple[float | None, float | None]:
    base = state.baseline
    if base is None or not base.timed:
        return None, None
    fb = [base.floor_us[c] / t for c, t in base.time_us.items() if c in base.floor_us]
    fbest = [base.floor_us[c] / t for c, t in state.best_time_us.items() if c in base.floor_us]
    return (geomean(fb) if fb else None, geomean(fbest) if fbest else None)


def _counts(evals: list[EvalRecord]) -> dict[str, int]:
    return {"total": len(evals), "accepted": sum(e.accepted for e in evals),
            "passed": sum(e.passed for e in evals), "failed": sum(not e.passed for e in evals)}
