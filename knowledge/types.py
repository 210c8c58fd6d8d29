"""Data passed between the layers: document sections and chunks (loaders, chunker, store, profile extractor), the
verifier's stages and findings (verifier, agent loop, findings memory). Each is defined here once."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import BadInputError

#: A verdict's stage (DESIGN.md, "Verdict"): the first stage a candidate failed, or ``pass``.
VerdictStage = Literal["static_rejected", "compile_error", "runtime_error", "mismatch", "too_fast_to_be_true", "pass"]
#: The verdict stages in the order the verifier runs them.
VERDICT_STAGES: tuple[str, ...] = get_args(VerdictStage)


@dataclass(frozen=True)
class Section:
    """A run of text under one heading path, as a loader found it.

    Attributes:
        text: plain text of the section (tables rendered as text; one row per line where possible).
        source: file path as given by the user, or a display name.
        page: 1-based PDF page, or None for non-paginated formats.
        heading_path: headings from the document title down, e.g. ("MI300X", "Memory").
        kind: "prose" | "table" | "table_row" | "caption".
        caption: a table row's caption as its text starts with it ("" when the table has none).
    """

    text: str
    source: str
    page: int | None = None
    heading_path: tuple[str, ...] = ()
    kind: str = "prose"
    caption: str = ""


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit with provenance; `id` is deterministic (content hash + source).

    Attributes:
        id: stable id, e.g. sha256(chip | source | heading_path | text)[:32].
        text: the chunk text (what is embedded and shown).
        chip: chip name it belongs to.
        source: file path/name; page: 1-based PDF page or None; section: " > ".join(heading_path).
        kind: as `Section.kind`.
        metadata: extra string/number fields stored with the chunk.
    """

    id: str
    text: str
    chip: str
    source: str
    page: int | None = None
    section: str = ""
    kind: str = "prose"
    metadata: dict[str, str | int | float] = field(default_factory=dict)

    def cite(self) -> str:
        """Citation such as ``amd-cdna-3-white-paper.pdf p.12 > Compute Units``."""
        loc = f" p.{self.page}" if self.page is not None else ""
        sec = f" > {self.section}" if self.section else ""
        return f"{self.source}{loc}{sec}"


#: Relative tolerance between a given speedup and baseline_time_us / candidate_time_us.
SPEEDUP_TOLERANCE = 0.01


class Finding(BaseModel):
    """One verified attempt (DESIGN.md "Finding"). Times in microseconds; speedup = baseline / candidate.

    Attributes:
        id: deterministic when left empty: sha256(chip | task | case_id | run_id | verdict_id)[:24].
        chip / task / case_id / case_class: where it was measured (chip names are stored lower-case).
        patterns: catalog pattern ids the candidate applied (relative to the baseline it is compared with).
        parameters: knob values (`FamilyConfig` fields) and pattern parameters of the candidate.
        baseline_time_us / candidate_time_us: medians, microseconds (None when not timed).
        speedup: baseline_time_us / candidate_time_us (computed when both times are given).
        roofline_fraction: floor_us / candidate_time_us (1.0 = at the roofline floor).
        verdict_stage / verdict_id: the verifier's verdict; only ``pass`` can be accepted.
        run_id / date: the optimization run and the ISO date (YYYY-MM-DD or a full ISO timestamp).
        accepted: the loop kept the candidate; False for slower, noisy or failed candidates (kept as knowledge).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = ""
    chip: str = Field(min_length=1)
    task: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    case_class: str = ""
    patterns: tuple[str, ...] = ()
    parameters: dict[str, Any] = Field(default_factory=dict)
    baseline_time_us: float | None = Field(default=None, gt=0)
    candidate_time_us: float | None = Field(default=None, gt=0)
    speedup: float | None = Field(default=None, gt=0)
    roofline_fraction: float | None = Field(default=None, ge=0)
    verdict_stage: VerdictStage
    verdict_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)
    date: str
    accepted: bool = False
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("chip"), str):
            data["chip"] = data["chip"].strip().lower()  # chip names are case-insensitive (load_profile)
        base, cand = data.get("baseline_time_us"), data.get("candidate_time_us")
        if data.get("speedup") is None and base and cand:
            data["speedup"] = float(base) / float(cand)
        if not data.get("id"):
            key = "|".join(str(data.get(k, "")) for k in ("chip", "task", "case_id", "run_id", "verdict_id"))
            data["id"] = hashlib.sha256(key.encode()).hexdigest()[:24]
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Finding:
        try:
            dt.date.fromisoformat(self.date[:10])
        except ValueError:
            raise ValueError(f"date {self.date!r} is not an ISO date (YYYY-MM-DD)") from None
        if self.accepted and (self.verdict_stage != "pass" or self.speedup is None):
            raise ValueError(f"an accepted finding needs verdict_stage 'pass' and a speedup "
                             f"(got {self.verdict_stage!r}, speedup {self.speedup})")
        if self.speedup and self.baseline_time_us and self.candidate_time_us:
            ratio = self.baseline_time_us / self.candidate_time_us
            if abs(ratio - self.speedup) > SPEEDUP_TOLERANCE * ratio:
                raise ValueError(f"speedup {self.speedup} disagrees with baseline_time_us / candidate_time_us = "
                                 f"{ratio:.4g}")
        return self

    @property
    def timed(self) -> bool:
        """The candidate's time was measured (a speedup or a candidate time is known)."""
        return self.speedup is not None or self.candidate_time_us is not None

    @property
    def status(self) -> str:
        """``accepted``, ``rejected`` (verified and timed, not kept), ``untimed`` (passed the verifier where nothing
        is timed, e.g. the Triton interpreter: no evidence about speed) or ``failed`` (did not pass the verifier)."""
        if self.accepted:
            return "accepted"
        if self.verdict_stage != "pass":
            return "failed"
        return "rejected" if self.timed else "untimed"

    @classmethod
    def from_record(cls, obj: Any) -> Finding:
        """A Finding from a mapping or an object with the same attribute names (e.g. the loop's draft);
        ``status == 'accepted'`` stands for ``accepted=True`` when `accepted` is absent.

        Raises:
            BadInputError: a field is missing or invalid; the message names it.
        """
        if isinstance(obj, Finding):
            return obj
        fields = list(cls.model_fields)
        data = dict(obj) if isinstance(obj, Mapping) else {k: getattr(obj, k) for k in fields + ["status"]
                                                           if hasattr(obj, k)}
        if "accepted" not in data and "status" in data:
            data["accepted"] = data["status"] == "accepted"
        data.pop("status", None)
        data = {k: v for k, v in data.items() if k in fields}
        if isinstance(data.get("parameters"), Mapping):
            data["parameters"] = dict(data["parameters"])
        try:
            return cls(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "finding"
            raise BadInputError(f"finding {data.get('id') or ''}: {where}: {err['msg']}".replace("  ", " ")) \
                from None

    def summary(self) -> str:
        """Readable text stored in the findings collection (what `ask` shows and cites)."""
        pats = " + ".join(self.patterns) or "no pattern"
        params = ", ".join(f"{k}={v}" for k, v in sorted(self.parameters.items())) or "default parameters"
        head = (f"Finding on chip {self.chip}, task {self.task}, case {self.case_id}"
                f"{f' ({self.case_class})' if self.case_class else ''}: {pats} with {params}")
        if self.verdict_stage != "pass":
            body = f"failed verification at stage {self.verdict_stage}"
        elif self.candidate_time_us is not None and self.baseline_time_us is not None:
            body = (f"ran {self.candidate_time_us:.1f} us against {self.baseline_time_us:.1f} us "
                    f"({self.speedup:.2f}x)")
        else:
            body = "passed verification (not timed)"
        roof = (f", {100 * self.roofline_fraction:.1f}% of the roofline floor"
                if self.roofline_fraction and self.verdict_stage == "pass" else "")
        notes = f" Notes: {self.notes}" if self.notes else ""
        return (f"{head}; {body}{roof}; {self.status}. Verdict {self.verdict_id}, run {self.run_id}, "
                f"{self.date}.{notes}")

    def record(self, features: Mapping[str, float | None]) -> dict[str, Any]:
        """The JSON record kept in the graph and in the chunk metadata (fields + status + chip_features)."""
        return {**self.model_dump(mode="json"), "status": self.status, "chip_features": dict(features)}
