"""Run state and the run folder: candidates with lineage, verdicts, retrieval logs, all written atomically.

Layout of ``$CHIPLORE_HOME/runs/<run_id>/``::

    state.json            RunState (config, baseline, best, every evaluation, pending write-ahead marker)
    run.lock              held (fcntl) by the process running the run; its pid and purpose written inside
    kernel_v{N}.py        candidate N (kernel_v0.py: a copy of the baseline)
    kernel_v{N}.json      its lineage (id, parent_id, generation, patterns, parameters, rationale, ...)
    verdicts/v{N}.json    the verifier's verdict for candidate N, verbatim
    retrieval/v{N}.json   what was retrieved before proposing candidate N, with citations
    report/               written by `chiplore report`

Write-ahead rule (resume without repeating or losing an evaluation): before candidate N is verified the state
records ``pending = N``; the verdict file is written as soon as it exists; the evaluation record is appended
and ``pending`` cleared in one atomic state save. On resume a pending N with a verdict file is finished from
that file; one without is verified again.

One process at a time: a run is live while a process holds its ``run.lock`` (`RunDir.lock`), so ``--resume`` of a
live run is refused naming that pid; a lock left by a process that died is free and taken over. A save never goes
back in time: each save increments `RunState.saves`, and `RunDir.save_state` refuses to write over a file that was
saved more often than the state in hand (another process wrote it meanwhile).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.config import OptimizeConfig
from agent.errors import RunBusyError, RunConflictError, RunCorruptError, RunNotFoundError
from core.atomic_io import atomic_write_json, atomic_write_text
from core.errors import BadInputError, LockBusyError
from core.locks import FileLock, is_held, read_holder
from core.settings import runs_dir

STATE_VERSION = 1
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with seconds."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Lineage(BaseModel):
    """Where a candidate came from (the sidecar ``kernel_v{N}.json``)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    parent_id: str | None
    generation: int = Field(ge=0)
    proposer: str
    patterns: list[str] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""
    content_hash: str
    target_cases: list[str] = Field(default_factory=list)
    created_at: str = Field(default_factory=utc_now)


class BaselineRecord(BaseModel):
    """The baseline kernel's verification and timings; `noise` is the relative spread of its repeats."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    passed: bool
    timed: bool
    time_us: dict[str, float] = Field(default_factory=dict)
    noise: dict[str, float] = Field(default_factory=dict)
    roofline_fraction: dict[str, float] = Field(default_factory=dict)
    floor_us: dict[str, float] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)


class EvalRecord(BaseModel):
    """One candidate evaluation and the decision taken on it."""

    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1)
    candidate_id: str
    parent_id: str | None
    proposer: str
    stage: str
    passed: bool
    timed: bool
    accepted: bool
    decision: str
    time_us: dict[str, float] = Field(default_factory=dict)
    speedup: dict[str, float] = Field(default_factory=dict, description="baseline time / candidate time")
    geomean_speedup: float | None = None
    roofline_fraction: dict[str, float] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    target_cases: list[str] = Field(default_factory=list)
    changed_cases: list[str] = Field(default_factory=list, description="cases whose code differs from the best's")
    content_hash: str = ""
    wall_s: float = 0.0
    finding_ids: list[str] = Field(default_factory=list)
    finished_at: str = Field(default_factory=utc_now)


class PendingEval(BaseModel):
    """Write-ahead marker: candidate `n` is being evaluated."""

    model_config = ConfigDict(extra="forbid")
    n: int
    candidate_id: str
    started_at: str = Field(default_factory=utc_now)


class RunState(BaseModel):
    """Everything needed to report on a run or resume it; saved after every step."""

    model_config = ConfigDict(extra="forbid")
    version: int = STATE_VERSION
    run_id: str
    config: OptimizeConfig
    status: Literal["running", "finished", "stopped"] = "running"
    stop_kind: str | None = None
    stop_reason: str | None = None
    device: str = ""
    created_at: str = Field(default_factory=utc_now)
    updated_at: str = Field(default_factory=utc_now)
    elapsed_s: float = 0.0
    baseline: BaselineRecord | None = None
    best_id: str = Field("v0", pattern=r"^v[0-9]+$")
    best_time_us: dict[str, float] = Field(default_factory=dict, description="median of `reference_us` per case")
    reference_us: dict[str, list[float]] = Field(
        default_factory=dict, description="replicate times of the best kernel per case (`agent.reference`)")
    evaluations: list[EvalRecord] = Field(default_factory=list)
    pending: PendingEval | None = None
    no_improve_streak: int = 0
    findings_recorded: list[str] = Field(default_factory=list)
    resumes: int = 0
    saves: int = Field(0, ge=0, description="times this state was saved (`RunDir.save_state` never goes below)")

    @property
    def next_n(self) -> int:
        """Number of the next candidate (1-based; v0 is the baseline)."""
        return self.pending.n if self.pending else len(self.evaluations) + 1

    def best_record(self) -> EvalRecord | None:
        """The accepted evaluation that is the current best, or None while the baseline is best."""
        for record in reversed(self.evaluations):
            if record.candidate_id == self.best_id:
                return record
        return None


def new_run_id(task: str, chip: str) -> str:
    """``<task>-<chip>-<UTC yyyymmdd-hhmmss>-<4 hex>``, unique and sortable by start time."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{task}-{chip}-{stamp}-{secrets.token_hex(2)}"


class RunDir:
    """The folder of one run; every write is atomic (`core.atomic_io`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.run_id = self.path.name
        self._lock = FileLock(self.path / "run.lock")

    # ----- locating runs
    @classmethod
    def create(cls, run_id: str, root: Path | None = None) -> RunDir:
        """Make the folder for a new run.

        Raises:
            BadInputError: `run_id` has characters other than letters, digits, ``_ . -`` or already exists.
        """
        if not _RUN_ID.match(run_id):
            raise BadInputError(f"run id {run_id!r}: use letters, digits, '_', '.' and '-' only")
        path = (root or runs_dir()) / run_id
        if path.exists():
            raise BadInputError(f"run {run_id!r} already exists at {path}; use --resume {run_id}")
        (path / "verdicts").mkdir(parents=True)
        (path / "retrieval").mkdir()
        return cls(path)

    @classmethod
    def open(cls, run: str | Path, root: Path | None = None) -> RunDir:
        """An existing run, by id (under `root` or ``$CHIPLORE_HOME/runs``) or by path.

        Raises:
            RunNotFoundError: no folder with a ``state.json`` there; the message lists recent runs.
        """
        root = root or runs_dir()
        candidates = [Path(run)] if os.sep in str(run) or Path(run).is_absolute() else []
        candidates.append(root / str(run))
        for path in candidates:
            if (path / "state.json").is_file():
                return cls(path)
        known = ", ".join(recent_runs(root)) or "none"
        raise RunNotFoundError(f"run {str(run)!r} not found (no state.json); recent runs: {known}")

    @property
    def state_path(self) -> Path:
        return self.path / "state.json"

    # ----- the run lock
    def lock(self, what: str = "optimizing") -> None:
        """Hold this run's lock until `unlock` or the end of the process (a dead holder's lock is taken over).

        Raises:
            RunBusyError: the run is live in another process (or held by another `RunDir` of this one); the message
                names the pid.
        """
        try:
            self._lock.acquire(f"{what} run {self.run_id}")
        except LockBusyError:
            raise RunBusyError(self._busy_message()) from None

    def unlock(self) -> None:
        self._lock.release()

    def check_not_live(self) -> None:
        """Refuse a run that another process runs now (without taking its lock).

        Raises:
            RunBusyError: as `lock`.
        """
        if not self._lock.held and is_held(self._lock.path):
            raise RunBusyError(self._busy_message())

    def _busy_message(self) -> str:
        holder = read_holder(self._lock.path)
        who = f"pid {holder.pid} (since {holder.since})" if holder else "another process"
        return (f"run {self.run_id!r} is running in {who}; wait for it to finish or stop that process, "
                f"then resume it (lock {self._lock.path})")

    # ----- state
    def save_state(self, state: RunState) -> None:
        """Write `state` atomically; `updated_at` is refreshed and `saves` incremented.

        Raises:
            RunConflictError: the file on disk was saved more often than `state` (another process saved it after
                `state` was read): it is not overwritten with the older state.
        """
        on_disk = self._saves_on_disk()
        if on_disk > state.saves:
            raise RunConflictError(f"run {self.run_id!r}: state.json was saved by another process after this one read "
                                   f"it (save {on_disk}, this process holds save {state.saves}); not overwritten")
        state.saves += 1
        state.updated_at = utc_now()
        atomic_write_text(self.state_path, state.model_dump_json(indent=2) + "\n")

    def _saves_on_disk(self) -> int:
        """`RunState.saves` of the file on disk, read leniently (0 when absent or unreadable)."""
        try:
            value = json.loads(self.state_path.read_bytes().decode("utf-8")).get("saves", 0)
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            return 0
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def load_state(self) -> RunState:
        """Read ``state.json``.

        Raises:
            RunCorruptError: the file is unreadable, not JSON, not an object, or not a valid run state (the message
                says which, and names the first invalid field).
            BadInputError: a run state written by a newer chiplore (its version is above `STATE_VERSION`).
        """
        data = self._read_json(self.state_path, "state.json is corrupt or not a chiplore run state")
        if not isinstance(data, dict):
            raise self._corrupt("state.json is corrupt or not a chiplore run state",
                                f"a JSON {_json_type(data)}, expected an object")
        version = data.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > STATE_VERSION:
            raise BadInputError(f"run {self.run_id!r}: state.json has run state version {version}, this chiplore "
                                f"reads version {STATE_VERSION}; upgrade chiplore")
        if version != STATE_VERSION:
            raise self._corrupt("state.json is corrupt or not a chiplore run state",
                                "no version field" if version is None else f"version {version!r}")
        try:
            return RunState.model_validate(data)
        except ValidationError as exc:
            raise self._corrupt("state.json is corrupt or not a chiplore run state", _first_error(exc)) from None

    def _corrupt(self, what: str, detail: str) -> RunCorruptError:
        return RunCorruptError(f"run {self.run_id!r}: {what} ({detail}); folder {self.path}")

    def _read_json(self, path: Path, what: str) -> Any:
        """Parsed JSON of `path`, a file of this run.

        Raises:
            RunCorruptError: "run ID: `what` (why)" when it cannot be read, is not UTF-8 or not JSON.
        """
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise self._corrupt(what, f"cannot read: {exc.strerror or exc}") from None
        if not raw.strip():
            raise self._corrupt(what, "empty file")
        try:
            return json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._corrupt(what, "not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise self._corrupt(what, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None

    def _read_sidecar(self, path: Path) -> Any:
        """A JSON file of the run other than the state (lineage, verdict, retrieval log); None if absent.

        Raises:
            RunCorruptError: the file exists but is not readable JSON (the message names it).
        """
        if not path.is_file():
            return None
        return self._read_json(path, f"{path.relative_to(self.path)} is corrupt")

    # ----- candidates
    def candidate_path(self, n: int) -> Path:
        return self.path / f"kernel_v{n}.py"

    def lineage_path(self, n: int) -> Path:
        return self.path / f"kernel_v{n}.json"

    def best_kernel(self, state: RunState) -> Path:
        """Path of the best kernel file that `state` names (``kernel_v{N}.py`` of ``state.best_id``).

        Raises:
            RunCorruptError: the file is missing; the message names it, the best id and the run folder.
        """
        path = self.candidate_path(int(state.best_id[1:]))
        if not path.is_file():
            raise self._corrupt(f"the best kernel {path.name} is missing",
                                f"state.json names {state.best_id} as the best kernel")
        return path

    def write_candidate(self, n: int, source: str, lineage: Lineage) -> Path:
        """Write ``kernel_v{n}.py`` then its lineage sidecar; returns the kernel path."""
        path = self.candidate_path(n)
        atomic_write_text(path, source)
        atomic_write_json(self.lineage_path(n), lineage.model_dump())
        return path

    def read_lineage(self, n: int) -> Lineage | None:
        """Lineage of candidate `n`, or None if its sidecar was never written."""
        data = self._read_sidecar(self.lineage_path(n))
        if data is None:
            return None
        try:
            return Lineage.model_validate(data)
        except ValidationError as exc:
            raise self._corrupt(f"{self.lineage_path(n).name} is corrupt or not a lineage",
                                _first_error(exc)) from None

    def read_candidate(self, n: int) -> str:
        return self.candidate_path(n).read_text(encoding="utf-8")

    # ----- verdicts and retrieval logs
    def verdict_path(self, n: int) -> Path:
        return self.path / "verdicts" / f"v{n}.json"

    def write_verdict(self, n: int, verdict: dict[str, Any]) -> None:
        atomic_write_json(self.verdict_path(n), verdict)

    def read_verdict(self, n: int) -> dict[str, Any] | None:
        """Verdict of candidate `n` as saved, or None if there is none yet.

        Raises:
            RunCorruptError: the file is not a JSON object.
        """
        data = self._read_sidecar(self.verdict_path(n))
        if data is not None and not (isinstance(data, dict) and "stage" in data):
            raise self._corrupt(f"verdicts/v{n}.json is corrupt", "not a verdict object with a stage")
        return data

    def write_verdict_extra(self, n: int, repeat: int, verdict: dict[str, Any]) -> None:
        """Verdict of a repeated evaluation of candidate `n` (baseline timing repeats): ``v{n}-r{repeat}.json``."""
        atomic_write_json(self.path / "verdicts" / f"v{n}-r{repeat}.json", verdict)

    def write_reply(self, n: int, reply: str) -> None:
        """The model's reply for candidate `n`, verbatim (``replies/v{n}.md``)."""
        atomic_write_text(self.path / "replies" / f"v{n}.md", reply)

    def write_retrieval(self, n: int, log: dict[str, Any]) -> None:
        atomic_write_json(self.path / "retrieval" / f"v{n}.json", log)

    def read_retrieval(self, n: int) -> dict[str, Any] | None:
        """Retrieval log of candidate `n`, or None if there is none.

        Raises:
            RunCorruptError: the file is not a JSON object.
        """
        data = self._read_sidecar(self.path / "retrieval" / f"v{n}.json")
        if data is not None and not isinstance(data, dict):
            raise self._corrupt(f"retrieval/v{n}.json is corrupt", f"a JSON {_json_type(data)}, expected an object")
        return data


def recent_runs(root: Path, limit: int = 5) -> list[str]:
    """The `limit` most recently updated runs under `root`, oldest first, each as ``ID (status, N evaluations)``;
    a run whose state cannot be read shows ``ID (unreadable state.json)`` (never raises)."""
    def updated(state: Path) -> float:
        try:
            return state.stat().st_mtime
        except OSError:
            return 0.0
    states = sorted(Path(root).glob("*/state.json"), key=lambda p: (updated(p), p.parent.name))[-limit:]
    return [f"{p.parent.name} ({_status_of(p)})" for p in states]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 evaluation``, ``2 evaluations``: `n` and `noun`, plural unless `n` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _status_of(state_path: Path) -> str:
    """``status, N evaluations`` of a saved run state, read leniently (for listings only)."""
    try:
        data = json.loads(state_path.read_bytes().decode("utf-8"))
        status, evaluations = data["status"], data["evaluations"]
        if not isinstance(status, str) or not isinstance(evaluations, list):
            raise TypeError
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return "unreadable state.json"
    return f"{status}, {count(len(evaluations), 'evaluation')}"


def _json_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")


def _first_error(exc: ValidationError) -> str:
    """The first pydantic error as ``field.path: message`` (and how many more there are)."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(x) for x in first["loc"]) or "state"
    more = f"; {len(errors) - 1} more error(s)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


class Clock:
    """Wall-clock budget over resumes: `elapsed_s` of earlier sessions plus this session's monotonic time."""

    def __init__(self, previous_s: float) -> None:
        self.previous_s = previous_s
        self.start = time.monotonic()

    def elapsed_s(self) -> float:
        return self.previous_s + (time.monotonic() - self.start)
