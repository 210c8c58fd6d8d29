"""The verifier's contract types: `Verdict` (DESIGN.md, "Verdict") and `VerifyOptions`.

A verdict is staged (the first stage a candidate failed, or ``pass``), carries human-readable reasons (what the
agent feeds back to the proposer), the measured errors per case and the timings in microseconds. Failure is
never signalled by None or inf: the stage says it, the reasons explain it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from knowledge.types import VERDICT_STAGES, VerdictStage

Stage = VerdictStage  # the verdict's stage (knowledge.types: one definition for the verifier and the findings)
STAGES = VERDICT_STAGES


def _drop(keys: tuple[str, ...]):
    """A before-validator that drops computed fields, so a dumped model validates back."""

    def drop(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if k not in keys} if isinstance(data, dict) else data

    return model_validator(mode="before")(classmethod(drop))


class CaseErrors(BaseModel):
    """Numerical errors of one case over all its trials (worst values; counts summed)."""

    model_config = ConfigDict(extra="forbid")
    _computed = _drop(("mismatch_fraction",))
    case_id: str
    trials: int = 0
    elements: int = 0
    mismatches: int = 0
    nonfinite: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mismatch_fraction(self) -> float:
        """Mismatching elements / compared elements (NaN and inf count as mismatches)."""
        return self.mismatches / self.elements if self.elements else 0.0


class CaseTiming(BaseModel):
    """Timing of one bench case. Times in microseconds; fraction = floor / time (1.0 = at the roofline)."""

    model_config = ConfigDict(extra="forbid")
    case_id: str
    time_us: float = Field(description="median CUDA-event time per call, device-wide sync inside the region")
    reps: int
    warmup: int
    min_us: float
    max_us: float
    wall_us: float = Field(description="median perf_counter time per call in the sandbox")
    verifier_wall_us: float = Field(description="median time per call seen by the verifier's own process")
    floor_us: float = Field(0.0, description="roofline floor from the chip profile; 0 when the profile lacks peaks")
    fraction_of_floor: float = 0.0


class VerifyOptions(BaseModel):
    """How thorough a verification is. Defaults: CPU = interpreter, test + hidden cases, untimed;
    GPU = bench + hidden cases, timed."""

    model_config = ConfigDict(extra="forbid")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    include_test_cases: bool | None = Field(None, description="None: on the CPU only")
    include_bench_cases: bool | None = Field(None, description="None: on a GPU only")
    case_ids: tuple[str, ...] = Field((), description="restrict bench/test cases to these ids (hidden ones stay)")
    random_cases: int | None = Field(None, ge=1, description="hidden random shapes, one repeated with a new seed "
                                     "(None: 3 on the CPU, 2 on a GPU where each new shape may cost a compile)")
    timing: bool | None = Field(None, description="None: time on a GPU only. True on the CPU runs the timing "
                                "protocol on the selected test cases with a wall clock (tests; not a measurement)")
    warmup: int = Field(3, ge=0)
    reps: int = Field(20, ge=3)
    rotations: int = Field(2, ge=1, description="input sets cycled through during timing")
    timeout_s: float = Field(600.0, gt=0, description="per sandbox child, from its start (the time a child waits "
                             "for the other child to end before timing does not count)")
    parallel_children: int | None = Field(None, ge=1, le=4, description="sandbox children per candidate, run at "
                                          "the same time so their Triton compilations overlap (`split_plan`): 4 "
                                          "splits the bench cases over two children and the other trials over two "
                                          "more; 1 runs the whole plan in one child; None: 4 on a GPU, 2 on the "
                                          "CPU (the interpreter is CPU-bound: more children than cores gain "
                                          "nothing)")
    fs_isolation: bool = Field(True, description="Landlock: sandbox children may write only beneath their scratch "
                               "folder, the shared Triton cache, their own /proc entries and, on a GPU, the device "
                               "nodes `gpu_dev_writes` names (reads unrestricted)")
    gpu_dev_writes: Literal["nodes", "all"] = Field("nodes", description="with fs_isolation on a GPU: 'nodes' lets "
                                                    "a child write only the driver's device nodes (/dev/nvidia*, "
                                                    "/dev/null; ROCm /dev/kfd, /dev/dri), file rights only; 'all' "
                                                    "all of /dev, /dev/shm included (the fallback should the "
                                                    "driver need more: scripts/probe_landlock_cuda.py)")
    memory_limit_gb: float = Field(32.0, gt=0, description="address space (CPU) or resident memory (GPU)")
    baseline_time_us: dict[str, float] = Field(default_factory=dict, description="per bench case, for speedups")
    speedup_flag: float = Field(10.0, description="speedups above this over the baseline are flagged")
    skip_static: bool = Field(False, description="testing: run the dynamic stage even if a static rule fails")
    compute_guard: bool = Field(True, description="testing: switch the torch compute guard off")


class Verdict(BaseModel):
    """Outcome of verifying one candidate file (DESIGN.md contract)."""

    model_config = ConfigDict(extra="forbid")
    _computed = _drop(("passed",))
    stage: Stage
    reasons: list[str] = Field(default_factory=list)
    errors: dict[str, CaseErrors] = Field(default_factory=dict)
    time_us: dict[str, float] = Field(default_factory=dict, description="median microseconds per bench case")
    timed: bool = False
    timing_note: str = ""
    timings: dict[str, CaseTiming] = Field(default_factory=dict)
    speedup: dict[str, float] = Field(default_factory=dict, description="baseline time / candidate time")
    flags: list[str] = Field(default_factory=list, description="passed, but worth a second look")
    task: str
    candidate: str
    candidate_sha256: str
    device: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    verify_seconds: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        """True only for stage ``pass``."""
        return self.stage == "pass"

    def summary(self) -> str:
        """Short multi-line text: stage, reasons, flags, timing note."""
        lines = [f"{self.stage}: {self.candidate} ({self.task}, {self.device or 'no device'})"]
        lines += [f"  reason: {r}" for r in self.reasons]
        lines += [f"  flag: {f}" for f in self.flags]
        lines.append(f"  timing: {self.timing_note}")
        return "\n".join(lines)
