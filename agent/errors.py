"""Named exceptions that steer the optimization loop (control flow by exception, not by flags).

`StopRun` and its subclasses end a run cleanly: the loop catches them, records `reason` in the run state and
saves it. `CandidateFailed` marks one proposal as a failed candidate (no code, wrong signature, ...): it is
recorded as an evaluation and the loop goes on. Errors the user must fix are `core.errors.ChiploreError`.
"""

from __future__ import annotations

from core.errors import BadInputError, ChiploreError


class StopRun(Exception):  # noqa: N818  (a signal, not an error)
    """The run stops here; `reason` is a one-line explanation kept in the run state."""

    #: machine-readable stop kind, stored in the run state (``stop_kind``)
    kind = "stopped"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MaxEvaluationsReached(StopRun):
    """`StopRules.max_evals` candidate evaluations have been made."""

    kind = "max_evals"


class NoImprovement(StopRun):
    """`StopRules.patience` consecutive evaluations did not improve on the best kernel."""

    kind = "no_improvement"


class BudgetExhausted(StopRun):
    """The wall-clock budget (`StopRules.budget_min`) is used up."""

    kind = "budget"


class RooflineReached(StopRun):
    """Every target case runs at `StopRules.target_roofline_fraction` of its roofline floor or better."""

    kind = "roofline"


class SearchSpaceExhausted(StopRun):
    """The proposer has no candidate left that it has not proposed before."""

    kind = "exhausted"


class ProposerUnavailable(StopRun):
    """The proposer cannot be reached (LLM endpoint down after retries); the run can be resumed later."""

    kind = "proposer_unavailable"


class ModelStopped(StopRun):
    """A tool-calling model ended several turns in a row without a candidate (it stopped calling tools or stopped
    writing code): the run ends with that reason."""

    kind = "model_stopped"


class TokenBudgetExhausted(StopRun):
    """The run used up its token budget (`agent.config.ToolBounds.tokens_per_run`, counted from the responses)."""

    kind = "token_budget"


class VerifierSuspect(StopRun):
    """Several different candidates in a row failed verification with the very same reason: that is the harness
    or the machine (e.g. out of device memory), not the candidates; the run stops so it can be resumed later."""

    kind = "verifier_suspect"


class CandidateFailed(Exception):  # noqa: N818
    """A proposal that is not a usable candidate (no code, wrong signature); recorded as a failed evaluation.

    Attributes:
        stage: short failure stage stored with the evaluation (``no_code`` or ``bad_signature``).
        reason: human-readable reason, fed back to the proposer.
    """

    def __init__(self, stage: str, reason: str, raw_reply: str | None = None,
                 parameters: dict | None = None) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason
        self.raw_reply = raw_reply
        self.parameters = dict(parameters or {})  # kept with the failed evaluation (e.g. tokens the model used)


class BaselineFailed(ChiploreError):
    """The task's baseline kernel did not pass the verifier, so nothing can be measured against it."""


class RunNotFoundError(BadInputError):
    """`--resume RUN` or `report RUN` names a run directory that does not exist."""


class RunCorruptError(BadInputError):
    """A run folder's ``state.json`` (or a file it names) is unreadable, truncated, or not a chiplore run state."""


class ProposerConfigError(BadInputError):
    """The proposer cannot be built or reached before a run starts (no model configured, endpoint unreachable,
    API key refused); raised before any run folder is created."""


class DependencyMissingError(ChiploreError):
    """A component the command needs (verifier, kernel family, knowledge store) is not installed."""


class RunBusyError(BadInputError):
    """The run is live: another process (or another part of this one) holds its lock; the message names the pid."""


class RunConflictError(ChiploreError):
    """``state.json`` on disk was saved after the state this process holds (by another process): not overwritten."""
