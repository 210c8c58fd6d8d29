"""Anti-cheat verifier: static rules, a sandboxed dynamic stage, timing and a plausibility gate.

Public API (docs/ARCHITECTURE.md): ``verify(task, candidate_path, profile, options) -> Verdict``; `Verifier`
reuses one sandbox zygote for many candidates.
"""

from agent.verifier.engine import Verifier, verify
from agent.verifier.verdict import STAGES, CaseErrors, CaseTiming, Stage, Verdict, VerifyOptions

__all__ = ["STAGES", "CaseErrors", "CaseTiming", "Stage", "Verdict", "Verifier", "VerifyOptions", "verify"]
