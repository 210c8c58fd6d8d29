"""Typed limits and options of one optimization run (validated by pydantic; stored in the run state).

Defaults follow the issue: 40 evaluations, stop after 20 evaluations without improvement, a regression of more
than 5% on any case rejects a candidate, and speedups must exceed the noise measured on the baseline.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ProposerName = Literal["offline", "llm", "llm-tools", "uniform", "external"]
TimingMode = Literal["gpu", "interpreter"]


class StopRules(BaseModel):
    """When a run stops by itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_evals: int = Field(40, ge=1, description="candidate evaluations (baseline runs not counted)")
    patience: int = Field(20, ge=1, description="consecutive evaluations without improvement before stopping")
    budget_min: float | None = Field(
        None, gt=0, description="wall-clock budget in minutes, over all resumes; checked before each new candidate, "
                                "so the baseline and a verification in progress always finish")
    target_roofline_fraction: float = Field(
        0.85, gt=0, le=1.0, description="stop when every case reaches this fraction of its roofline floor")
    same_failure_limit: int = Field(
        4, ge=2, description="stop when this many candidates in a row fail verification with the same reason")


class AcceptanceRules(BaseModel):
    """When a verified candidate replaces the best kernel."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    regression_limit: float = Field(0.05, ge=0, description="reject if any case is slower than best by more")
    noise_floor: float = Field(0.02, ge=0, description="minimum relative noise assumed per case")
    baseline_repeats: int = Field(2, ge=1, le=5, description="baseline timings; their spread is the noise")


class LLMOptions(BaseModel):
    """OpenAI-compatible endpoint settings. Empty fields fall back to the environment
    (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``CHIPLORE_MODEL``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str | None = None
    model: str | None = None
    temperature: float = Field(0.4, ge=0, le=2)
    max_tokens: int = Field(8192, ge=256)
    timeout_s: float = Field(600.0, gt=0)
    retries: int = Field(4, ge=0, description="retries after a network error, with exponential backoff")
    backoff_s: float = Field(2.0, ge=0, description="first backoff delay; doubled on every retry")
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="passed through verbatim, e.g. {'chat_template_kwargs': {'enable_thinking': False}}")

    def resolved_base_url(self) -> str | None:
        """`base_url` or ``$OPENAI_BASE_URL`` (None: the openai client's default)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def resolved_model(self) -> str | None:
        """`model` or ``$CHIPLORE_MODEL``."""
        return self.model or os.environ.get("CHIPLORE_MODEL") or None


class ToolBounds(BaseModel):
    """Limits of the tool-calling LLM proposer (``--proposer llm-tools``). Tokens are counted from the ``usage``
    of every response; the run's wall clock is `StopRules.budget_min`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tool_calls_per_iteration: int = Field(16, ge=1, description="tool calls the model may make for one candidate")
    tokens_per_iteration: int = Field(200_000, ge=1000, description="tokens (prompt + completion) for one candidate")
    tokens_per_run: int = Field(5_000_000, ge=1000, description="tokens over the whole run, resumes included")
    idle_iterations: int = Field(3, ge=1, description="turns in a row without a candidate (no tool call that "
                                                      "submits one, no code) before the run ends")


class OptimizeConfig(BaseModel):
    """Everything that defines one `chiplore optimize` run.

    Attributes:
        task / chip: task name (`kernels.task.load_task`) and chip profile name.
        proposer: ``offline`` (pattern-guided, default), ``llm`` (one reply per candidate), ``llm-tools`` (a model
            that calls chiplore's tools, `agent.proposers.llm_tools`), ``uniform`` (the ablation's random search) or
            ``external`` (candidates submitted from outside, e.g. over MCP: `agent.run_api`).
        retrieval: False for ``--no-retrieval``: no documents, patterns or findings are consulted and the
            proposer becomes uniform choice over the same family space.
        timing: ``gpu`` (timed on the device) or ``interpreter`` (correctness only, no speedup claimed).
        cases: bench case ids to optimize (None: all of the task's bench cases).
        seed: seeds the proposer's random choices (the verifier draws its own secret seeds).
        verify_options: passed to the verifier unchanged.
        record_findings: write findings to the knowledge store (off for correctness-only runs by default).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    task: str
    chip: str
    proposer: ProposerName = "offline"
    retrieval: bool = True
    timing: TimingMode = "gpu"
    cases: list[str] | None = None
    seed: int = 0
    stop: StopRules = StopRules()
    accept: AcceptanceRules = AcceptanceRules()
    llm: LLMOptions = LLMOptions()
    tool_bounds: ToolBounds = ToolBounds()
    verify_options: dict[str, Any] = Field(default_factory=dict)
    record_findings: bool = True
    docs_k: int = Field(4, ge=0, description="document hits retrieved per iteration")
    findings_k: int = Field(12, ge=0, description="findings retrieved per iteration")
