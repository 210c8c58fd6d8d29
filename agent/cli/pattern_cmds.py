"""``chiplore patterns`` and ``chiplore findings``: the pattern graph and the findings memory as a user sees them.

JSON schemas (``--json``; keys are stable):

- ``patterns`` without ``--chip``: ``{"task", "patterns": [{"id", "name", "addresses", "knobs", "preconditions",
  "sources", "evidence": n}]}``.
- ``patterns --chip C --case K``: ``{"chip", "task", "case", "bottlenecks": [{"id", "holds", "signal", "reason"}],
  "patterns": [RankedPattern.to_json()]}``; without ``--case`` the same per bench case under ``"cases"``.
  ``expected_gain`` and ``prior_gain`` are modeled, not measured. Each ``evidence`` item has ``basis``
  (``measured`` for a finding, ``public_example`` for a modeled share of a published total) and ``quoted_total``
  (the total the public source quotes, null for findings); both keys were added without removing any.
- ``findings``: ``{"findings": [Finding fields + "status"]}``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import typer
from rich.table import Table

from agent.cli.app import app
from agent.cli.console import CliConsole
from core.errors import BadInputError
from kernels.task import DEFAULT_TASK

_console = CliConsole()  # paths and progress lines are never broken mid-name when piped


def _profile(chip: str) -> Any:
    """The chip's profile (`hardware_profiles.load_profile`).

    Raises:
        BadInputError: no profile (naming the profiles; for a chip whose documents are onboarded but yielded no
            profile facts, saying so and how to add a profile), or a broken profile file.
    """
    from hardware_profiles import load_profile, profile_path

    if profile_path(chip) is None:
        documents = _documents_of(chip)
        if documents:
            name = chip.strip().lower()
            raise BadInputError(
                f"no hardware profile for chip {name!r}: its {documents} onboarded document(s) gave no profile facts; "
                f"ranking needs one: run `chiplore profile detect --as {name}` on the device, or write "
                f"$CHIPLORE_HOME/profiles/{name}.yaml (format: `chiplore profile show h200 --json`)")
    return load_profile(chip)


def _documents_of(chip: str) -> int:
    """Documents onboarded for `chip` (0 when the store cannot be opened: the profile error is then the one shown)."""
    from core.errors import StoreError

    try:
        from knowledge.retrieval import default_store

        summary = {c.chip: c.documents for c in default_store().chips()}
    except (StoreError, ImportError):
        return 0
    return summary.get(chip.strip().lower(), 0)


def _task(name: str) -> Any:
    from kernels.task import load_task

    try:
        return load_task(name)
    except KeyError as exc:
        raise BadInputError(exc.args[0]) from None


def _cases(task: Any, case_id: str | None) -> list[Any]:
    if case_id is None:
        return list(task.bench_cases)
    try:
        return [task.case(case_id)]
    except KeyError as exc:
        raise BadInputError(exc.args[0]) from None


def _fmt(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


@app.command("patterns")
def patterns_cmd(
    chip: str = typer.Option(None, "--chip", help="rank for this chip (a known profile)"),
    task: str = typer.Option(DEFAULT_TASK, "--task", help="kernel task"),
    case: str = typer.Option(None, "--case", help="one case id of the task, with --chip (default: every bench case)"),
    as_json: bool = typer.Option(
        False, "--json", help="print JSON instead of a table (schema: docstring of agent/cli/pattern_cmds.py)"),
) -> None:
    """Optimization patterns: the catalog, or ranked for a chip with parameters computed from its profile."""
    from knowledge.catalog import load_catalog

    spec = _task(task)
    catalog = load_catalog()
    if chip is None:
        if case is not None:
            _cases(spec, case)
            from hardware_profiles import known_chips

            raise BadInputError(f"--case {case}: ranking for a case needs --chip (one of {', '.join(known_chips())}); "
                                "without --chip the catalog is listed for the whole task")
        _print_catalog(catalog, spec.name, _graph(), as_json)
        return
    profile = _profile(chip)
    cases = _cases(spec, case)
    graph = _graph()
    results = [_rank_case(profile, spec, c, graph, catalog) for c in cases]
    if as_json:
        doc = results[0] if case is not None else {"chip": profile.chip, "task": spec.name, "cases": results}
        typer.echo(json.dumps(doc, indent=2))
        return
    if case is None:
        _console.print(f"[bold]{spec.name} on {profile.chip}[/bold]: top patterns per bench case "
                       "(modeled gain, knobs); details with --case")
    shown = "".join(_print_ranked(result, detailed=case is not None) for result in results)
    for line in legend(shown):
        _console.print(line, highlight=False, markup=False)


def _graph() -> Any:
    """The pattern graph synced with the findings store; from the graph file alone (with a warning on stderr)
    when the store cannot be opened."""
    from core.errors import StoreError
    from knowledge.findings import load_graph

    try:
        return load_graph()
    except (StoreError, ImportError) as exc:
        typer.secho(f"warning: findings store unavailable ({exc}); ranking from the graph file only",
                    fg=typer.colors.YELLOW, err=True)
        return load_graph(sync=False)


def _rank_case(profile: Any, spec: Any, case: Any, graph: Any, catalog: Any) -> dict[str, Any]:
    from knowledge.ranking import classify_case, rank_patterns

    ranked = rank_patterns(profile, spec, case, graph=graph, catalog=catalog)
    return {"chip": profile.chip, "task": spec.name, "case": case.id, "case_class": case.case_class,
            "bottlenecks": classify_case(profile, spec, case, catalog),
            "patterns": [r.to_json() for r in ranked]}


def _print_catalog(catalog: Any, task: str, graph: Any, as_json: bool) -> None:
    rows = []
    for p in catalog.patterns_for(task):
        rows.append({"id": p.id, "name": p.name, "addresses": list(p.addresses), "knobs": sorted(p.knobs),
                     "preconditions": [pc.text for pc in p.preconditions],
                     "sources": [catalog.source(s).title for s in p.sources],
                     "evidence": len(graph.evidence(p.id, task))})
    if as_json:
        typer.echo(json.dumps({"task": task, "patterns": rows}, indent=2))
        return
    table = Table(title=f"Pattern catalog for {task} (rank them for a chip with --chip)")
    for col in ("pattern", "addresses", "knobs", "preconditions", "evidence"):
        table.add_column(col)
    for r in rows:
        table.add_row(f"{r['id']}\n{r['name']}", ", ".join(r["addresses"]), ", ".join(r["knobs"]) or "-",
                      "\n".join(r["preconditions"]) or "-", str(r["evidence"]))
    _console.print(table)


#: The marks of the ranked listing, each explained under it when it appears (`legend`).
NOT_APPLICABLE = " - "
LEGEND = {
    NOT_APPLICABLE: " -  = not applicable on this chip: a 'requires' precondition fails (the line marked 'fails')",
    "?": "?   = unknown: the chip profile lacks a value it needs; a gain ?x has neither a prior nor evidence",
}


def legend(printed: str) -> list[str]:
    """The `LEGEND` lines for the marks that occur in `printed` (the listing's text), in `LEGEND`'s order."""
    marks = {NOT_APPLICABLE: any(line.startswith(NOT_APPLICABLE) for line in printed.splitlines()),
             "?": "?" in printed}
    return [text for mark, text in LEGEND.items() if marks[mark]]


def _print_ranked(result: dict[str, Any], detailed: bool) -> str:
    """Print one case's ranking; return the text of its marked values (ranks, gains, knobs, parameters, signals),
    where `legend` looks for marks: free text (names, preconditions, citations) may hold a '?' of its own."""
    title = f"{result['task']} / {result['case']} ({result['case_class']}) on {result['chip']}"
    signals = ", ".join(f"{b['id']} {_fmt(b['holds'])}" for b in result["bottlenecks"])
    if not detailed:
        top = [p for p in result["patterns"] if p["applicable"]][:3]
        cells = [f"{p['pattern_id']} modeled {_fmt(p['expected_gain'])}x {_knobs(p)}".strip() for p in top]
        _console.print(f"[bold]{result['case']}[/bold]: " + " | ".join(cells))
        return " ".join(f"{_fmt(p['expected_gain'])} {_knobs(p)}" for p in top)
    _console.print(f"[bold]{title}[/bold]\nbottleneck signals: {signals}\n")
    marks = [signals]
    for i, p in enumerate(result["patterns"], start=1):
        gain = _gain_label(p)
        rank = f"{i:2d}." if p["applicable"] else NOT_APPLICABLE
        marks += [rank, _knobs(p), *map(_fmt, p["parameters"].values())]
        _console.print(f"{rank} [bold]{p['pattern_id']}[/bold]: {p['name']}; {gain}")
        measured = sorted({v.removeprefix("evidence: ") for v in p["knob_sources"].values() if v != "rule"})
        lines = [f"knobs: {_knobs(p) or '-'}" + (f" (* from the evidence: {'; '.join(measured)})" if measured else ""),
                 "parameters: " + (", ".join(f"{k}={_fmt(v)}" for k, v in p["parameters"].items()) or "-")]
        for c in p["preconditions"]:
            mark = {True: "holds", False: "fails", None: "unknown"}[c["holds"]]
            lines.append(f"{c['kind']}: {c['text']} ({mark})")
        lines += [f"unknown {k}: {v}" for k, v in p["unknown"].items()]
        lines += [_evidence_line(e) for e in p["evidence"][:3]]
        if p["family_default"]:
            lines.append("built into the kernel family")
        if not p["family_support"]:
            lines.append("not a family knob: a candidate must implement it")
        for line in lines:
            _console.print(f"      {line}", highlight=False, markup=False)
    return "\n".join(marks)


def _gain_label(p: dict[str, Any]) -> str:
    """``modeled gain 1.41x (prior 1.02x from the chip profile, with the evidence below)``: the expected gain is a
    model output, never a measurement."""
    if p["expected_gain"] is None:
        return "modeled gain unknown (no prior, no evidence)"
    evidence = "the evidence below" if p["evidence"] else ""
    if p["prior_gain"] is None:
        basis = f"no prior; from {evidence}" if evidence else "no prior"
    else:
        basis = f"prior {_fmt(p['prior_gain'])}x from the chip profile" + (f", with {evidence}" if evidence else "")
    return f"modeled gain {_fmt(p['expected_gain'])}x ({basis})"


def _evidence_line(e: dict[str, Any]) -> str:
    """A finding's gain is measured; a public example's per-step gain is a modeled share of the total it quotes."""
    gain = math.exp(e["log_gain"])
    head = f"on {e['chip']}, weight {e['weight']:.2f}"
    if e.get("basis") == "public_example":
        total = f" of the quoted {e['quoted_total']:g}x total" if e.get("quoted_total") else ""
        return f"evidence [public example {head}: modeled share {gain:.2f}x{total}]: {e['citation']}"
    return f"evidence [{e['kind']} {head}: measured {gain:.2f}x]: {e['citation']}"


def _knobs(p: dict[str, Any]) -> str:
    """``k=v`` pairs; a value taken from a same-chip measurement instead of the rules is marked ``*``."""
    marks = {k: "*" if p.get("knob_sources", {}).get(k, "rule") != "rule" else "" for k in p["knobs"]}
    return ", ".join(f"{k}={_fmt(v)}{marks[k]}" for k, v in p["knobs"].items())


@app.command("findings")
def findings_cmd(
    chip: str = typer.Option(None, "--chip", help="only findings measured on this chip"),
    task: str = typer.Option(None, "--task", help="only findings of this task"),
    pattern: str = typer.Option(None, "--pattern", help="only findings that applied this pattern"),
    as_json: bool = typer.Option(
        False, "--json", help="print JSON instead of a table (schema: docstring of agent/cli/pattern_cmds.py)"),
) -> None:
    """Findings recorded so far (accepted, rejected, passed but not timed, failed verification), oldest first."""
    from knowledge.catalog import load_catalog
    from knowledge.findings import query_findings

    if task is not None:
        _task(task)
    if pattern is not None:
        load_catalog().pattern(pattern)
    found = query_findings(chip=chip, task=task, pattern=pattern)
    if chip is not None and not found:
        _check_chip_known(chip)
    if as_json:
        typer.echo(json.dumps({"findings": [{**f.model_dump(mode="json"), "status": f.status} for f in found]},
                              indent=2))
        return
    _console.print(f"[bold]Findings{f' on {chip}' if chip else ''}: {len(found)}[/bold]")
    for f in found:
        status = finding_label(f)
        measured = f.status in ("accepted", "rejected")  # only timed passes have a speed figure
        speed = f"{f.speedup:.2f}x" if measured and f.speedup else "-"
        roof = f", {100 * f.roofline_fraction:.0f}% of floor" if measured and f.roofline_fraction else ""
        params = ", ".join(f"{k}={v}" for k, v in sorted(f.parameters.items()))
        _console.print(f"{f.date[:10]}  {f.chip}  {f.task}/{f.case_id}  {' + '.join(f.patterns) or '-'}"
                       f"{f' [{params}]' if params else ''}  {speed}{roof}  {status}  id {f.id}",
                       highlight=False, markup=False)


def finding_label(finding: Any) -> str:
    """How the findings listing labels a finding: ``accepted``, ``rejected`` (verified and timed, not kept),
    ``passed, not timed`` or ``failed verification (STAGE)``."""
    return {"untimed": "passed, not timed",
            "failed": f"failed verification ({finding.verdict_stage})"}.get(finding.status, finding.status)


def _check_chip_known(chip: str) -> None:
    """Raise BadInputError when `chip` has no profile, no onboarded documents and no findings (the message names the
    chips that have each); a chip known in any of these ways simply has no findings yet."""
    from hardware_profiles import known_chips
    from knowledge.findings import query_findings

    with_findings = sorted({f.chip for f in query_findings()})
    name = chip.strip().lower()
    if name in set(known_chips()) | set(with_findings) or _documents_of(name):
        return
    raise BadInputError(f"unknown chip {chip!r}: no profile, documents or findings for it; profiles: "
                        f"{', '.join(known_chips()) or 'none'}; "
                        f"chips with findings: {', '.join(with_findings) or 'none'}")
