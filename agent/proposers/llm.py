"""LLM proposer: any OpenAI-compatible endpoint through the `openai` client.

Endpoint and model come from `agent.config.LLMOptions` or the environment (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``CHIPLORE_MODEL``); `LLMOptions.extra_body` is passed through verbatim (thinking switches,
sampling extras). Prompts are the templates ``llm_system.md.j2`` and ``llm_user.md.j2``: the four-stage workflow,
the anti-cheat rules, the retrieved context with citations, the current best source and the last verdict
verbatim. A reply without code, with a syntax error or the wrong signature is a failed candidate
(`CandidateFailed`); network errors are retried with exponential backoff, then the run stops cleanly
(`ProposerUnavailable`) with its state saved, ready for ``--resume``.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import openai

from agent.config import LLMOptions
from agent.errors import CandidateFailed, ProposerConfigError, ProposerUnavailable
from agent.family_space import source_hash
from agent.proposers.base import Proposal, ProposalContext
from agent.runstate import EvalRecord, Lineage
from agent.templates import render
from hardware_profiles.schema import display_value

_CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError)
#: Characters of the last verdict shown verbatim (the whole verdict unless it is huge).
VERDICT_CHARS = 12000
#: Seconds the pre-flight check (`LLMProposer.check`) waits for the endpoint.
CHECK_TIMEOUT_S = 10.0


def extract_code(reply: str, entry_point: str) -> str:
    """The last fenced Python block of `reply` that defines `entry_point` (else the last block).

    Raises:
        CandidateFailed: stage ``no_code`` when the reply holds no fenced code block.
    """
    blocks = [b.strip() + "\n" for b in _CODE_BLOCK.findall(reply or "")]
    if not blocks:
        raise CandidateFailed("no_code", "the reply holds no fenced ```python code block", reply)
    defining = [b for b in blocks if re.search(rf"^def\s+{re.escape(entry_point)}\s*\(", b, re.MULTILINE)]
    return (defining or blocks)[-1]


def check_signature(source: str, entry_point: str, expected: inspect.Signature) -> None:
    """The module defines `entry_point` at top level with a signature the verifier's calls bind to (the rules of
    `agent.verifier.signature`, with `expected`'s required parameters; whether every parameter the verifier sets is
    declared is the verifier's own static rule, which knows the task's cases).

    Raises:
        CandidateFailed: stage ``syntax_error`` or ``bad_signature`` with what differs.
    """
    from agent.verifier.signature import EMPTY, signature_problems

    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CandidateFailed("syntax_error", f"line {exc.lineno}: {exc.msg}") from None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point]
    if not defs:
        raise CandidateFailed("bad_signature", f"no top-level function {entry_point!r} in the code")
    args = defs[-1].args
    pairs = tuple((name, param.default) for name, param in expected.parameters.items())
    problems = signature_problems(args, pairs, frozenset(name for name, default in pairs if default is EMPTY))
    if problems:
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        raise CandidateFailed("bad_signature", f"{entry_point} takes ({', '.join(names)}): {problems[0]}")


def parse_header(reply: str) -> tuple[list[str], list[str]]:
    """``PATTERNS:`` and ``TARGET CASES:`` lines of a reply (``none``/``all`` give empty lists)."""
    def field(name: str) -> list[str]:
        match = re.search(rf"^\s*{name}\s*:\s*(.+)$", reply or "", re.MULTILINE | re.IGNORECASE)
        if not match:
            return []
        items = [s.strip(" `*") for s in match.group(1).split(",")]
        return [s for s in items if s and s.lower() not in ("none", "all")]
    return field("PATTERNS"), field("TARGET CASES")


class LLMProposer:
    """Proposes candidates written by a model. `client` defaults to ``openai.OpenAI`` on the resolved endpoint;
    `sleep` is injectable so tests need not wait for the backoff."""

    name = "llm"

    def __init__(self, options: LLMOptions, client: Any | None = None, sleep: Callable[[float], None] = time.sleep):
        """Raises:
            ProposerConfigError: no model is configured (neither `LLMOptions.model` nor ``CHIPLORE_MODEL``).
        """
        self.options = options
        self.model = options.resolved_model()
        if not self.model:
            raise ProposerConfigError("--proposer llm: no model configured; set CHIPLORE_MODEL to the model name "
                                      "your OpenAI-compatible endpoint serves (and OPENAI_BASE_URL to the endpoint)")
        self.client = client or openai.OpenAI(base_url=options.resolved_base_url(),
                                              api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
                                              timeout=options.timeout_s, max_retries=0)
        self.sleep = sleep

    def check(self) -> None:
        """Pre-flight check before a run starts: the endpoint answers (``GET /models``, one try, `CHECK_TIMEOUT_S`)
        and accepts the API key. Any other answer (e.g. a server without ``/models``) counts as reachable; the
        model name itself is checked by the first request.

        Raises:
            ProposerConfigError: the endpoint is unreachable or refuses the API key.
        """
        client = self.client.with_options(timeout=min(CHECK_TIMEOUT_S, self.options.timeout_s), max_retries=0) \
            if hasattr(self.client, "with_options") else self.client
        try:
            client.models.list()
        except openai.APIConnectionError as exc:
            raise ProposerConfigError(f"--proposer llm: LLM endpoint {self._where()} is unreachable "
                                      f"({type(exc).__name__}: {exc}); start the server or set OPENAI_BASE_URL"
                                      ) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ProposerConfigError(f"--proposer llm: LLM endpoint {self._where()} refused the API key "
                                      f"(HTTP {exc.status_code}); set OPENAI_API_KEY") from None
        except openai.APIStatusError:
            pass  # it answered: reachable

    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        """The model sees history through the prompt (recent evaluations, last verdict); nothing to keep here."""

    def propose(self, ctx: ProposalContext) -> Proposal:
        """Ask the model for candidate `ctx.n`.

        Raises:
            CandidateFailed: the reply has no code, a syntax error or the wrong signature.
            ProposerUnavailable: the endpoint failed after the retries, or refused the request.
        """
        reply = self.complete(build_messages(ctx))
        source = extract_code(reply, ctx.task.entry_point)
        try:
            check_signature(source, ctx.task.entry_point, ctx.signature)
        except CandidateFailed as failed:
            failed.raw_reply = reply
            raise
        patterns, targets = parse_header(reply)
        rationale = _CODE_BLOCK.sub("", reply).strip()[:2000]
        known = {c.id for c in ctx.cases}
        return Proposal(source=source, content_hash=source_hash(source), patterns=patterns,
                        parameters={"model": self.model}, rationale=rationale,
                        target_cases=[t for t in targets if t in known], raw_reply=reply)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion with retries; returns the reply text ('' if the model sent none)."""
        response = self.request(messages)
        if not response.choices:
            return ""
        return response.choices[0].message.content or ""

    def request(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        """One ``chat.completions.create`` call (`extra`: e.g. ``tools``) with retries and exponential backoff on
        network errors; returns the response object.

        Raises:
            ProposerUnavailable: the endpoint failed after the retries, or refused the request.
        """
        delay = self.options.backoff_s
        for attempt in range(self.options.retries + 1):
            try:
                return self.client.chat.completions.create(
                    model=self.model, messages=messages, temperature=self.options.temperature,
                    max_tokens=self.options.max_tokens, extra_body=self.options.extra_body or None, **extra)
            except _RETRYABLE as exc:
                if attempt == self.options.retries:
                    raise ProposerUnavailable(f"LLM endpoint {self._where()} failed {attempt + 1} time(s): "
                                              f"{type(exc).__name__}: {exc}") from None
                self.sleep(delay)
                delay *= 2
            except openai.APIStatusError as exc:
                raise ProposerUnavailable(f"LLM endpoint {self._where()} refused the request "
                                          f"(HTTP {exc.status_code}): {exc.message}") from None
        raise AssertionError("unreachable")

    def where(self) -> str:
        """The endpoint's base URL, for messages."""
        return self._where()

    def _where(self) -> str:
        return str(getattr(self.client, "base_url", self.options.resolved_base_url()))


def build_messages(ctx: ProposalContext) -> list[dict[str, str]]:
    """System and user messages for candidate `ctx.n` from the two prompt templates."""
    system = render("llm_system.md.j2", entry_point=ctx.task.entry_point, task=ctx.task.name, chip=ctx.chip,
                    regression_pct=round(100 * ctx.regression_limit), signature=bare_signature(ctx.signature),
                    family_module=family_module(ctx))
    user = render("llm_user.md.j2", **user_variables(ctx))
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def family_module(ctx: ProposalContext) -> str:
    """The module a family candidate imports (`KernelFamily.module`); '' for a task without a family."""
    return ctx.task.family.module if ctx.task.family is not None else ""


def bare_signature(signature: inspect.Signature) -> str:
    """The entry point's parameters as source text without annotations (``q_extend, ..., sm_scale=None``)."""
    bare = signature.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()],
        return_annotation=inspect.Signature.empty)
    return str(bare)[1:-1]


def _fmt(value: float | None, pattern: str = "{:.1f}") -> str:
    return "-" if value is None else pattern.format(value)


#: Verdict keys a model needs first (the decision, then why); the rest (errors per case, the config and its plan of
#: trials, the largest part) follow in name order, so a cut at `VERDICT_CHARS` drops the plan, never the stage.
VERDICT_KEY_ORDER = ("stage", "passed", "reasons", "verify_seconds", "timing")


def verdict_text(verdict: dict[str, Any]) -> str:
    """The verifier's verdict as indented JSON: top-level keys in `VERDICT_KEY_ORDER`, then by name; nested keys
    by name."""
    first = [k for k in VERDICT_KEY_ORDER if k in verdict]
    ordered = {k: json.loads(json.dumps(verdict[k], sort_keys=True, default=str))
               for k in [*first, *sorted(set(verdict) - set(first))]}
    return json.dumps(ordered, indent=1)


def user_variables(ctx: ProposalContext) -> dict[str, Any]:
    """Variables of the per-candidate prompt: profile lines, diagnosis rows, retrieved context, the kernel family,
    recent evaluations, the best source and the last verdict verbatim (cut at `VERDICT_CHARS`)."""
    rows = []
    for case in ctx.cases:
        d = ctx.diagnoses.get(case.id)
        rows.append({
            "case": case.id, "case_class": case.case_class, "time": _fmt(ctx.best_time_us.get(case.id)),
            "baseline": _fmt(ctx.baseline_time_us.get(case.id)), "floor": _fmt(d.floor_us if d else None),
            "fraction": _fmt(d.roofline_fraction if d else None, "{:.1%}"), "bottleneck": d.bottleneck if d else "-",
            "noise": _fmt(ctx.noise.get(case.id), "{:.1%}")})
    patterns: dict[str, dict[str, Any]] = {}
    for case_id, views in ctx.retrieval.patterns.items():
        for v in views:
            entry = patterns.setdefault(v.pattern_id + json.dumps(v.knobs, sort_keys=True, default=str), {
                "pattern_id": v.pattern_id, "cases": [], "score": v.score, "expected_gain": v.expected_gain,
                "knobs": v.knobs, "parameters": v.parameters, "citations": v.citations[:3]})
            entry["cases"].append(case_id)
            entry["score"] = max(entry["score"], v.score)
    example = None
    if ctx.space is not None:
        table = {k: ctx.space.structure_config(k) for k in sorted(ctx.space.classes)}
        example = ctx.space.render(table, ctx.signature, {"id": "example", "parent_id": "v0", "generation": 1,
                                                          "patterns": [], "rationale": "", "run_id": ctx.run_id,
                                                          "chip": ctx.chip}).strip()
    verdict = verdict_text(ctx.last_verdict) if ctx.last_verdict else ""
    return {
        "n": ctx.n, "run_id": ctx.run_id, "chip": ctx.chip, "best_id": ctx.best_id, "timed": ctx.timed,
        "profile_lines": [f"{name}: {display_value(f.value)} {f.unit}" for name, f in ctx.profile.fields().items()
                          if f.value is not None],
        "diagnosis_rows": rows, "retrieval_enabled": ctx.retrieval.enabled, "documents": ctx.retrieval.documents,
        "patterns": sorted(patterns.values(), key=lambda p: -p["score"]), "findings": ctx.retrieval.findings,
        "family_module": family_module(ctx), "knobs": list(ctx.task.knobs.items()),
        "example_candidate": example, "recent": ctx.history[-8:], "best_source": ctx.best_source.rstrip(),
        "last_verdict": verdict[:VERDICT_CHARS],
    }
