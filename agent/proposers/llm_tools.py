"""Tool-calling LLM proposer (``--proposer llm-tools``): the model drives chiplore's own tools through OpenAI-style
function calling, several calls per candidate, and hands its candidate in with ``submit_candidate``.

The tools are those of ``chiplore mcp`` (`agent.mcp.server`), called in this process through the same MCP server
object, so schemas, validation and one-line errors are identical; each tool's output goes back to the model
verbatim (a tool error as ``error: <line>``). The loop owns the run, so ``start_run`` and ``finish_run`` are not
offered, and ``submit_candidate`` ends the model's turn: its source becomes the loop's candidate, which the loop
verifies and accepts or rolls back; the result comes back verbatim at the start of the next turn (the last
verdict). Every turn starts a fresh conversation (system prompt ``llm_tools_system.md.j2``, user prompt
``llm_tools_user.md.j2``), so the proposer's state is a function of the run folder and a killed run resumes.

Bounds (`agent.config.ToolBounds`, recorded in the run config and the report): tool calls and tokens per turn,
tokens per run (counted from each response's ``usage``), turns in a row without a candidate; the wall clock is
`StopRules.budget_min`. A malformed tool call (arguments not JSON), an unknown tool or a bad argument is answered
with an error the model can correct; a reply without a tool call and without code, or a turn over its bounds, is
a failed candidate (`CandidateFailed`); several turns in a row without a candidate end the run (`ModelStopped`),
the token budget too (`TokenBudgetExhausted`); network errors retry with backoff, then stop the run resumably
(`ProposerUnavailable`, from `LLMProposer.request`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.config import LLMOptions, ToolBounds
from agent.errors import CandidateFailed, ModelStopped, TokenBudgetExhausted
from agent.family_space import source_hash
from agent.proposers.base import Proposal, ProposalContext
from agent.proposers.llm import (
    LLMProposer,
    bare_signature,
    check_signature,
    extract_code,
    family_module,
    parse_header,
    user_variables,
)
from agent.runstate import EvalRecord, Lineage
from agent.templates import render

#: MCP tools the loop keeps for itself (it owns the run).
LOOP_OWNED = ("start_run", "finish_run")
#: Tools that read the knowledge base: not offered when the run has retrieval off (``--no-retrieval``).
KNOWLEDGE_TOOLS = ("search_knowledge", "rank_patterns", "list_findings")
SUBMIT = "submit_candidate"


@dataclass
class Usage:
    """What one turn spent: tokens from the responses' ``usage``, requests and tool calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    responses_without_usage: int = 0

    def add(self, usage: Any) -> None:
        self.requests += 1
        if usage is None:
            self.responses_without_usage += 1
            return
        prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.total_tokens += int(usage.total_tokens or prompt + completion)

    def to_json(self) -> dict[str, int]:
        return dict(vars(self))


class ToolBridge:
    """chiplore's MCP tools called in this process (`agent.mcp.server.build_server` over a `Toolbox`)."""

    def __init__(self, verify_options: Mapping[str, Any] | None = None, retrieval: bool = True) -> None:
        from agent.mcp.server import build_server
        from agent.mcp.toolbox import Toolbox

        self.toolbox = Toolbox(verify_options)
        self.server = build_server(self.toolbox)
        self.hidden = set(LOOP_OWNED) | (set() if retrieval else set(KNOWLEDGE_TOOLS))
        self._schemas: list[dict[str, Any]] | None = None

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries (type function, name, description, JSON-schema parameters) of every tool the
        model may call."""
        if self._schemas is None:
            import anyio

            tools = anyio.run(self.server.list_tools)
            self._schemas = [{"type": "function", "function": {
                "name": t.name, "description": t.description or "", "parameters": t.input_schema}}
                for t in tools if t.name not in self.hidden]
        return self._schemas

    def names(self) -> list[str]:
        return [s["function"]["name"] for s in self.schemas()]

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The tool's output text verbatim; ``error: <line>`` for a tool error."""
        import anyio
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            result = anyio.run(self.server.call_tool, name, arguments)
        except ToolError as exc:  # what the MCP server sends a client as an error result
            return f"error: {exc}"
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return f"error: {text}" if result.is_error else text

    def close(self) -> None:
        self.toolbox.close()


@dataclass
class Turn:
    """One turn's conversation and bookkeeping."""

    messages: list[dict[str, Any]]
    usage: Usage = field(default_factory=Usage)
    log: list[str] = field(default_factory=list)

    def transcript(self) -> str:
        """Markdown of the turn: every message, tool call and tool output (verbatim)."""
        return "\n\n".join(self.log) + "\n"


class ToolCallingProposer:
    """See the module docstring. `client` and `sleep` as for `LLMProposer` (tests); `bridge` defaults to the
    MCP tools over a fresh `Toolbox` with `verify_options`, without the knowledge tools when `retrieval` is off.
    The ``run`` argument of the model's ``submit_candidate`` is not needed: the candidate belongs to this run."""

    name = "llm-tools"

    def __init__(self, options: LLMOptions, bounds: ToolBounds, verify_options: Mapping[str, Any] | None = None,
                 client: Any | None = None, sleep: Callable[[float], None] = time.sleep,
                 bridge: ToolBridge | None = None, retrieval: bool = True) -> None:
        """Raises:
            ProposerConfigError: no model is configured (see `LLMProposer`).
        """
        self.llm = LLMProposer(options, client=client, sleep=sleep)
        self.model = self.llm.model
        self.bounds = bounds
        self._bridge = bridge
        self._verify_options = dict(verify_options or {})
        self._retrieval = retrieval
        self.run_tokens = 0
        self.idle: list[str] = []  # reasons of the turns in a row that ended without a candidate

    @property
    def bridge(self) -> ToolBridge:
        if self._bridge is None:
            self._bridge = ToolBridge(self._verify_options, self._retrieval)
        return self._bridge

    def check(self) -> None:
        """The endpoint answers and accepts the key (`LLMProposer.check`)."""
        self.llm.check()

    def close(self) -> None:
        """Stop the verifier sandboxes the tools started."""
        if self._bridge is not None:
            self._bridge.close()

    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        """Count the turn's tokens (also on resume, from the run's records) and turns without a candidate."""
        usage = record.parameters.get("usage") or {}
        self.run_tokens += int(usage.get("total_tokens") or 0)
        if record.content_hash:
            self.idle = []
        elif record.proposer == self.name:
            self.idle.append(f"{record.stage}: {record.reasons[0] if record.reasons else ''}".strip(": "))

    # ----- one turn
    def propose(self, ctx: ProposalContext) -> Proposal:
        """Run one turn of the model with tools until it submits a candidate.

        Raises:
            ModelStopped: `ToolBounds.idle_iterations` turns in a row ended without a candidate.
            TokenBudgetExhausted: the run's tokens reached `ToolBounds.tokens_per_run`.
            CandidateFailed: this turn gave no usable candidate (no code, bad signature, over its bounds).
            ProposerUnavailable: the endpoint failed after retries.
        """
        b = self.bounds
        if len(self.idle) >= b.idle_iterations:
            raise ModelStopped(f"the model ended {len(self.idle)} turns in a row without a candidate (it stopped "
                               f"calling submit_candidate and sent no code); last: {self.idle[-1][:300]}")
        if self.run_tokens >= b.tokens_per_run:
            raise TokenBudgetExhausted(f"{self.run_tokens} tokens used (budget {b.tokens_per_run} per run)")
        if ctx.run_dir is not None:  # run_status / run files of this run, wherever its folder is
            self.bridge.toolbox.runs_root = ctx.run_dir.parent
        turn = Turn(build_messages(ctx, self.bridge.names()))
        turn.log += [f"## system\n\n{turn.messages[0]['content']}", f"## user\n\n{turn.messages[1]['content']}"]
        try:
            return self._converse(ctx, turn)
        except CandidateFailed as failed:
            failed.raw_reply = turn.transcript()
            failed.parameters = {"model": self.model, "usage": turn.usage.to_json()}
            raise

    def _converse(self, ctx: ProposalContext, turn: Turn) -> Proposal:
        b = self.bounds
        while True:  # the bounds are checked before each request: a candidate already sent is never thrown away
            if turn.usage.total_tokens > b.tokens_per_iteration:
                raise CandidateFailed("token_limit", f"{turn.usage.total_tokens} tokens in this turn (limit "
                                      f"{b.tokens_per_iteration}) without a candidate")
            if self.run_tokens + turn.usage.total_tokens >= b.tokens_per_run:
                raise CandidateFailed("token_budget", f"the run's token budget ({b.tokens_per_run}) ran out during "
                                      "this turn")
            response = self.llm.request(turn.messages, tools=self.bridge.schemas())
            turn.usage.add(getattr(response, "usage", None))
            message = response.choices[0].message if response.choices else None
            calls = list(getattr(message, "tool_calls", None) or [])
            content = (getattr(message, "content", None) or "") if message is not None else ""
            if not calls:
                turn.log.append(f"## assistant\n\n{content}")
                return self._from_reply(ctx, turn, content)
            turn.messages.append(_assistant_message(content, calls))
            for call in calls:
                proposal = self._tool_call(ctx, turn, call)
                if proposal is not None:
                    return proposal

    def _tool_call(self, ctx: ProposalContext, turn: Turn, call: Any) -> Proposal | None:
        """Answer one tool call (a tool message appended); a valid ``submit_candidate`` returns the proposal."""
        b = self.bounds
        turn.usage.tool_calls += 1
        function = getattr(call, "function", None)
        name = str(getattr(function, "name", "") or "")
        raw = str(getattr(function, "arguments", "") or "")
        turn.log.append(f"## tool call `{name}`\n\n```json\n{raw}\n```")
        if turn.usage.tool_calls > b.tool_calls_per_iteration:
            raise CandidateFailed("tool_call_limit", f"more than {b.tool_calls_per_iteration} tool calls in this "
                                  "turn without a candidate")
        try:
            arguments = json.loads(raw) if raw.strip() else {}
            if not isinstance(arguments, dict):
                raise ValueError(f"a JSON {type(arguments).__name__}, expected an object")
        except ValueError as exc:
            result = f"error: {name}: the arguments are not a JSON object ({' '.join(str(exc).split())[:200]})"
        else:
            if name == SUBMIT:
                return self._submitted(ctx, turn, arguments)
            if name not in self.bridge.names():
                result = f"error: unknown tool {name!r}; tools: {', '.join(self.bridge.names())}"
            else:
                result = self.bridge.call(name, arguments)
        turn.log.append(f"## tool output `{name}`\n\n```\n{result}\n```")
        turn.messages.append({"role": "tool", "tool_call_id": str(getattr(call, "id", "") or ""), "content": result})
        return None

    def _submitted(self, ctx: ProposalContext, turn: Turn, arguments: dict[str, Any]) -> Proposal:
        source = arguments.get("source")
        if not isinstance(source, str) or not source.strip():
            raise CandidateFailed("no_code", "submit_candidate was called without a source")

        def strings(key: str) -> list[str]:
            value = arguments.get(key) or []
            return [str(v) for v in value] if isinstance(value, list) else []
        rationale = str(arguments.get("rationale") or "")
        return self._proposal(ctx, turn, source, strings("patterns"), strings("target_cases"), rationale)

    def _from_reply(self, ctx: ProposalContext, turn: Turn, content: str) -> Proposal:
        """A final reply without tool calls: its fenced code block is the candidate (as for `LLMProposer`)."""
        try:
            source = extract_code(content, ctx.task.entry_point)
        except CandidateFailed:
            raise CandidateFailed("no_code", "the model ended its turn without calling submit_candidate and "
                                  "without a fenced code block") from None
        patterns, targets = parse_header(content)
        return self._proposal(ctx, turn, source, patterns, targets, content[:2000])

    def _proposal(self, ctx: ProposalContext, turn: Turn, source: str, patterns: list[str], targets: list[str],
                  rationale: str) -> Proposal:
        check_signature(source, ctx.task.entry_point, ctx.signature)
        known = {c.id for c in ctx.cases}
        return Proposal(source=source, content_hash=source_hash(source), patterns=patterns,
                        parameters={"model": self.model, "usage": turn.usage.to_json()}, rationale=rationale.strip(),
                        target_cases=[t for t in targets if t in known], raw_reply=turn.transcript())


def _assistant_message(content: str, calls: list[Any]) -> dict[str, Any]:
    """The assistant message with its tool calls, as the next request must repeat it."""
    return {"role": "assistant", "content": content or None, "tool_calls": [
        {"id": str(getattr(c, "id", "") or ""), "type": "function",
         "function": {"name": str(getattr(getattr(c, "function", None), "name", "") or ""),
                      "arguments": str(getattr(getattr(c, "function", None), "arguments", "") or "")}}
        for c in calls]}


def build_messages(ctx: ProposalContext, tools: list[str]) -> list[dict[str, Any]]:
    """System and user messages of one turn (templates ``llm_tools_system.md.j2`` / ``llm_tools_user.md.j2``)."""
    system = render("llm_tools_system.md.j2", entry_point=ctx.task.entry_point, task=ctx.task.name, chip=ctx.chip,
                    regression_pct=round(100 * ctx.regression_limit), signature=bare_signature(ctx.signature),
                    family_module=family_module(ctx), tools=tools, run_id=ctx.run_id)
    best_file = str(ctx.run_dir / f"kernel_v{ctx.best_id[1:]}.py") if ctx.run_dir else ""
    user = render("llm_tools_user.md.j2", **user_variables(ctx), best_file=best_file, task=ctx.task.name)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
