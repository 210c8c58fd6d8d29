"""What the static stage reports: each broken rule at its place (`Violation`) and the stage's result with the
verdict's reasons (`StaticReport`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule at one place in the candidate."""

    rule: str
    line: int
    detail: str
    rationale: str

    def reason(self, filename: str) -> str:
        """Readable reason for the verdict: rule, file:line, what, why."""
        return f"static rule {self.rule} ({filename}:{self.line}): {self.detail} -- {self.rationale}"


@dataclass(frozen=True)
class StaticReport:
    """Result of the static stage: a syntax error (compile_error) or the violations (static_rejected)."""

    violations: tuple[Violation, ...]
    syntax_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.syntax_error is None

    def reasons(self, filename: str, cap: int) -> list[str]:
        """Verdict reasons: every violated rule at least once, then further violations up to `cap` reasons.

        The first violation of each rule comes first, the most specific rules (fewest violations) before the
        broad ones that fire on every line; then the remaining violations in line order; the ones left over are
        summarized in a last line that names their rules.
        """
        counts: dict[str, int] = {}
        first: dict[str, Violation] = {}
        for v in self.violations:
            counts[v.rule] = counts.get(v.rule, 0) + 1
            first.setdefault(v.rule, v)
        leads = sorted(first.values(), key=lambda v: (counts[v.rule], v.line, v.rule))
        lead_ids = {id(v) for v in leads}
        rest = [v for v in self.violations if id(v) not in lead_ids]
        shown = leads + rest[:max(cap - len(leads), 0)]
        hidden = rest[max(cap - len(leads), 0):]
        reasons = [v.reason(filename) for v in shown]
        if hidden:
            rules = sorted({v.rule for v in hidden})
            reasons.append(f"... and {len(hidden)} more violations of {rules}")
        return reasons
