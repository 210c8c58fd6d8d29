"""chiplore's tools as plain functions: what `agent.mcp.server` serves over MCP and what the tool-calling LLM
proposer (`agent.proposers.llm_tools`) calls. Each returns a JSON-able dict; bad input raises a `ChiploreError`
with one line naming the input.

The `Toolbox` keeps the expensive parts warm for the life of the process: the knowledge store and embedding model
(`knowledge.retrieval.default_store`), one verifier (sandbox zygote) per task, chip and options, and the runs it
manages (`agent.run_api.ManagedRun`). Candidates never run in this process: the verifier runs them in its
sandbox children (`agent.verifier`). Heavy modules (torch, chromadb) are imported on first use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import BadInputError

#: Largest candidate source accepted (bytes of UTF-8); a kernel file is a few kilobytes.
MAX_SOURCE_BYTES = 1 << 20
#: Keys of a verdict that the tools return verbatim (the plan and options stay in the run folder's verdict file).
VERDICT_KEYS = ("stage", "passed", "reasons", "flags", "timed", "timing_note", "time_us", "speedup", "timings",
                "errors", "device", "candidate", "candidate_sha256", "verify_seconds")


def _gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (Triton interpreter)"


def verdict_view(verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict as the tools show it: stage, reasons and flags verbatim, errors, timings; the trial plan left
    out (its phase seconds kept)."""
    out = {k: verdict[k] for k in VERDICT_KEYS if k in verdict}
    config = verdict.get("config") or {}
    if config.get("phase_seconds"):
        out["phase_seconds"] = config["phase_seconds"]
    return out


class Toolbox:
    """The tools and the warm state behind them.

    Args:
        verify_options: `agent.verifier.VerifyOptions` fields applied to every verification this toolbox runs
            (e.g. ``{"random_cases": 1}`` for quick correctness checks); ``case_ids`` and ``timing`` are set per call.
        runs_root: folder of the runs (default ``$CHIPLORE_HOME/runs``).

    Raises (every tool method): a `core.errors.ChiploreError` whose message is one line naming the input:
    `BadInputError` (unknown chip, task, case or run, a missing file, an ended run, an oversized source),
    `StoreError` (the store cannot be read), `agent.errors.BaselineFailed` (``start_run``: the baseline did not
    verify). Times in the results are microseconds (``time_us``), as in the verdicts.
    """

    def __init__(self, verify_options: Mapping[str, Any] | None = None, runs_root: Path | None = None) -> None:
        self.verify_options = dict(verify_options or {})
        self.runs_root = runs_root
        self._verifiers: dict[tuple[str, str, str], Any] = {}
        self._runs: dict[str, Any] = {}
        self._verify_lock = threading.Lock()  # one verification at a time: each one loads every core
        self._run_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    # ----- knowledge
    def search_knowledge(self, query: str, chip: str | None = None, k: int = 5) -> dict[str, Any]:
        """Hybrid (dense + BM25) search over onboarded documents and recorded findings, with citations."""
        from knowledge.retrieval import default_store, search

        hits = search(query, chip=chip, k=k)
        if not hits and not default_store().chips():
            raise BadInputError(f"{default_store().location} is empty; onboard a chip's "
                                "documents first (`chiplore onboard CHIP PATH...`)")
        return {"query": query, "chip": chip.strip().lower() if chip else None, "k": k,
                "hits": [dict(rank=i, **h.to_json()) for i, h in enumerate(hits, start=1)]}

    def get_profile(self, chip: str) -> dict[str, Any]:
        """The chip's hardware profile: every field with value, unit, kind and source (null = unknown)."""
        from hardware_profiles import profile_path
        from hardware_profiles.yaml_io import profile_to_data

        profile = self._profile(chip)
        path = profile_path(chip)
        return {"profile": profile_to_data(profile), "file": str(path) if path else None}

    def rank_patterns(self, chip: str, task: str, case: str | None = None) -> dict[str, Any]:
        """Patterns ranked for the chip and each case (or one case), parameters computed from the profile."""
        from knowledge.findings import load_graph
        from knowledge.ranking import classify_case, rank_patterns

        profile, spec = self._profile(chip), self._task(task)
        if case is None:
            cases = list(spec.bench_cases)
        else:
            try:
                cases = [spec.case(case)]
            except KeyError as exc:
                raise BadInputError(str(exc.args[0])) from None
        graph = load_graph()
        out = []
        for c in cases:
            ranked = rank_patterns(profile, spec, c, graph=graph)
            out.append({"case": c.id, "case_class": c.case_class, "bottlenecks": classify_case(profile, spec, c),
                        "patterns": [r.to_json() for r in ranked]})
        return {"chip": profile.chip, "task": spec.name, "cases": out}

    def list_findings(self, chip: str | None = None, task: str | None = None,
                      pattern: str | None = None) -> dict[str, Any]:
        """Verified findings (accepted, rejected, untimed and failed candidates), oldest first."""
        from knowledge.findings import query_findings

        found = query_findings(chip=chip, task=task, pattern=pattern)
        return {"findings": [dict(f.model_dump(mode="json"), status=f.status) for f in found]}

    # ----- verification
    def run_verification(self, task: str, file: str, chip: str, cases: list[str] | None = None) -> dict[str, Any]:
        """The anti-cheat verifier on one candidate file; the verdict with its stage and reasons verbatim."""
        verdict = self._verify(task, file, chip, cases)
        return {"verdict": verdict_view(verdict)}

    def profile_kernel(self, task: str, file: str, chip: str, cases: list[str] | None = None) -> dict[str, Any]:
        """Verification first, then per case the time, roofline floor, fraction of the floor and bottleneck."""
        from agent.diagnosis import diagnose

        spec, profile = self._task(task), self._profile(chip)
        verdict = self._verify(task, file, chip, cases)
        times = verdict.get("time_us") or {}
        timed = bool(verdict.get("timed")) and verdict.get("stage") == "pass"
        bench = [c for c in spec.bench_cases if not timed or c.id in times]
        rows = [d.to_json() for d in diagnose(spec, bench, profile, times if timed else {}).values()]
        if timed:
            note = "timed on the GPU by the verifier (median of its timed calls, cold L2)"
        elif verdict.get("stage") != "pass":
            note = f"not timed: the kernel failed verification at stage {verdict.get('stage')}"
        else:
            note = ("nothing is timed on this machine (no GPU: correctness under the Triton interpreter only); "
                    "floors and roofline sides of the bench cases are from the chip profile")
        return {"verdict": verdict_view(verdict), "timed": timed, "note": note, "cases": rows}

    def _verify(self, task: str, file: str, chip: str, cases: list[str] | None) -> dict[str, Any]:
        from agent.seams import verdict_to_json
        from agent.verify_cases import check_verify_cases

        spec, profile = self._task(task), self._profile(chip)
        path = self._file(file)
        gpu = _gpu()
        check_verify_cases(spec, gpu, cases or [], option="cases")
        options = {**self.verify_options, "case_ids": tuple(cases or self.verify_options.get("case_ids", ()))}
        with self._verify_lock:
            verifier = self._verifier(spec, profile, options)
            return verdict_to_json(verifier.verify(path))

    def _verifier(self, spec: Any, profile: Any, options: Mapping[str, Any]) -> Any:
        from agent.verifier import Verifier, VerifyOptions

        key = (spec.name, profile.chip, json.dumps(options, sort_keys=True, default=str))
        if key not in self._verifiers:
            try:
                opts = VerifyOptions(**options)
            except ValueError as exc:
                raise BadInputError(f"verify options {sorted(options)}: {' '.join(str(exc).split())}") from None
            self._verifiers[key] = Verifier(spec, profile, opts)
        return self._verifiers[key]

    # ----- runs
    def start_run(self, task: str, chip: str, cases: list[str] | None = None) -> dict[str, Any]:
        """A new optimization run on the task's bench cases (or those named): folder created, baseline verified and
        timed (seconds on a GPU)."""
        from agent.adapters import RealVerifier, StoreKnowledge
        from agent.config import OptimizeConfig
        from agent.run_api import ManagedRun, status_of
        from agent.session import select_cases

        spec, profile = self._task(task), self._profile(chip)
        knowledge = StoreKnowledge(profile)
        notes = knowledge.check()
        gpu = _gpu()
        select_cases(spec, cases)
        config = OptimizeConfig(task=spec.name, chip=profile.chip, proposer="external",
                                timing="gpu" if gpu else "interpreter", record_findings=True,
                                verify_options=self.verify_options, cases=cases or None)
        managed = ManagedRun.create(config, profile, RealVerifier(), knowledge, device=_device_name(),
                                    root=self.runs_root)
        self._runs[managed.state.run_id] = managed
        return {**status_of(managed.run, managed.state), "notes": notes,
                "baseline_file": str(managed.run.candidate_path(0))}

    def submit_candidate(self, run: str, source: str, patterns: list[str] | None = None, rationale: str = "",
                         target_cases: list[str] | None = None) -> dict[str, Any]:
        """Write, verify and decide on one candidate of a run (the loop's own rules); a finding either way."""
        from agent.run_api import evaluation_summary

        if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
            raise BadInputError(f"submit_candidate: the source has more than {MAX_SOURCE_BYTES} bytes")
        with self._run_lock(run):
            managed = self._managed(run)
            record = managed.submit(source, patterns, rationale, target_cases)
            verdict = managed.run.read_verdict(record.n)
            state = managed.state
            return {"run": state.run_id, **evaluation_summary(record),
                    "file": str(managed.run.candidate_path(record.n)) if record.content_hash else None,
                    "verdict": verdict_view(verdict) if verdict else None,
                    "best_id": state.best_id, "evaluations": len(state.evaluations), "status": state.status,
                    "no_improve_streak": state.no_improve_streak, "patience": state.config.stop.patience}

    def run_status(self, run: str) -> dict[str, Any]:
        """A run's status, best kernel and every evaluation (read from its folder)."""
        from agent.run_api import status_of
        from agent.session import open_run

        folder, state = open_run(run, self.runs_root)
        return status_of(folder, state)

    def finish_run(self, run: str) -> dict[str, Any]:
        """End a run and write its report (Markdown, plots, best kernel)."""
        from agent.run_api import status_of

        with self._run_lock(run):
            managed = self._managed(run)
            files = managed.finish()
            self._runs.pop(managed.state.run_id, None)
            managed.parts.verifier.close()
            return {**status_of(managed.run, managed.state), "report": str(files.markdown),
                    "speedup_png": str(files.speedup_png), "roofline_png": str(files.roofline_png),
                    "best_kernel": str(files.best_kernel)}

    def _managed(self, run: str) -> Any:
        """The managed run `run`: held by this process, else opened from its folder (a run of an earlier server
        or of ``chiplore optimize``)."""
        from agent.adapters import RealVerifier, StoreKnowledge
        from agent.run_api import ManagedRun
        from agent.session import open_run

        if run in self._runs:
            return self._runs[run]
        _, state = open_run(run, self.runs_root)
        profile = self._profile(state.config.chip)
        knowledge = StoreKnowledge(profile) if state.config.retrieval else None
        managed = ManagedRun.resume(state.run_id, profile, RealVerifier(), knowledge, root=self.runs_root)
        self._runs[state.run_id] = managed
        return managed

    def _run_lock(self, run: str) -> threading.Lock:
        with self._locks_lock:
            return self._run_locks.setdefault(run, threading.Lock())

    # ----- inputs
    @staticmethod
    def _task(name: str) -> Any:
        from agent.session import load_task_checked

        return load_task_checked(name)

    @staticmethod
    def _profile(chip: str) -> Any:
        from agent.adapters import load_chip_profile

        if not chip or not chip.strip():
            raise BadInputError("chip: empty; give a chip name such as h200")
        return load_chip_profile(chip)

    @staticmethod
    def _file(file: str) -> Path:
        path = Path(file).expanduser()
        if path.is_dir():
            raise BadInputError(f"file {file}: is a directory; give the candidate kernel file (.py)")
        if not path.is_file():
            raise BadInputError(f"file {file}: no such file (paths are resolved on the server, relative to "
                                f"{Path.cwd()})")
        return path.resolve()

    def close(self) -> None:
        """Stop every verifier sandbox this toolbox started."""
        for verifier in self._verifiers.values():
            verifier.close()
        for managed in self._runs.values():
            managed.parts.verifier.close()
        self._verifiers.clear()
        self._runs.clear()
